// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace rookery::device {

/// A moment of the week in local time, for the weekly schedule.
struct WeekTime
{
    int weekday = 0; ///< 0 = Monday ... 6 = Sunday
    int minute = 0;  ///< minutes since local midnight, 0..1439
    int minuteOfWeek() const { return weekday * 1440 + minute; }
    static WeekTime fromMinuteOfWeek(int m);
    bool operator==(const WeekTime &) const = default;
    std::string describe() const; ///< "mon 18:00"
};

/// The governor's view of time: steady time for durations (duty cycle, hysteresis,
/// snooze) and wall time with a local calendar for the weekly schedule. A seam, so
/// tests can run a week of rules in microseconds (tests/fakes/fake_clock.h).
///
/// Thread safety: implementations must allow calls from any thread.
class Clock
{
public:
    virtual ~Clock() = default;
    virtual std::chrono::steady_clock::time_point steadyNow() const = 0;
    virtual std::chrono::system_clock::time_point wallNow() const = 0;
    /// Where `t` falls in the local week.
    virtual WeekTime weekTimeOf(std::chrono::system_clock::time_point t) const = 0;
    /// "14:32" for `t` in local time.
    std::string timeOfDay(std::chrono::system_clock::time_point t) const;
};

/// The real clocks and the process's time zone (localtime_r).
class SystemClock final : public Clock
{
public:
    std::chrono::steady_clock::time_point steadyNow() const override { return std::chrono::steady_clock::now(); }
    std::chrono::system_clock::time_point wallNow() const override { return std::chrono::system_clock::now(); }
    WeekTime weekTimeOf(std::chrono::system_clock::time_point t) const override;
};

/// One shared SystemClock.
std::shared_ptr<const Clock> systemClock();

} // namespace rookery::device
