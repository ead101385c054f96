// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>

#include "engine/device/clock.h"

namespace rookery::device {

/// A weekly time-of-day schedule: when work may run. Text form (docs/user-guide.md):
///
///     mon-fri 18:00-08:00, sat-sun all day
///
/// Rules are separated by commas or semicolons and add up. A rule is optional day
/// groups (`mon`, `fri-mon`, `weekdays`, `weekends`, `daily`; several separated by
/// spaces) followed by `HH:MM-HH:MM` or `all day`. Without days a rule applies every
/// day. A span whose end is not after its start runs past midnight into the next day
/// and belongs to the day it starts on. Empty text (or `always`) means any time.
///
/// Thread safety: a plain value.
class Schedule
{
public:
    /// Any time.
    Schedule();
    /// Throws rookery::Error that quotes the bad part and says what was expected.
    static Schedule parse(std::string_view text);

    bool always() const { return m_minutes.all(); }
    bool allows(WeekTime t) const { return m_minutes.test(size_t(t.minuteOfWeek())); }
    /// The first minute after `from` at which allows() changes; nullopt when it never does.
    std::optional<WeekTime> nextChange(WeekTime from) const;
    /// The text it was parsed from.
    const std::string &text() const { return m_text; }

private:
    static constexpr size_t kMinutesPerWeek = 7 * 24 * 60;
    std::bitset<kMinutesPerWeek> m_minutes;
    std::string m_text;
};

} // namespace rookery::device
