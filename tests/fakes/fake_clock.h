// SPDX-License-Identifier: GPL-3.0-or-later
// A clock that moves only when told to, for the resource governor's rules.
#pragma once

#include <ctime>
#include <mutex>

#include "engine/device/clock.h"

namespace rookery::test {

/// Starts on Monday 2024-01-01 00:00 in its own time zone, UTC, whatever the machine's.
/// Steady and wall time move together.
class FakeClock final : public device::Clock
{
public:
    std::chrono::steady_clock::time_point steadyNow() const override
    {
        std::lock_guard lock(m_mutex);
        return m_steady;
    }
    std::chrono::system_clock::time_point wallNow() const override
    {
        std::lock_guard lock(m_mutex);
        return m_wall;
    }
    device::WeekTime weekTimeOf(std::chrono::system_clock::time_point t) const override
    {
        const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
        std::tm utc{};
        gmtime_r(&seconds, &utc);
        return {(utc.tm_wday + 6) % 7, utc.tm_hour * 60 + utc.tm_min};
    }

    template <typename Rep, typename Period> void advance(std::chrono::duration<Rep, Period> d)
    {
        std::lock_guard lock(m_mutex);
        m_steady += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
        m_wall += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
    }
    /// Moves forward (never back) to the next `weekday` (0 = Monday) at hour:minute.
    void advanceTo(int weekday, int hour, int minute)
    {
        const device::WeekTime now = weekTimeOf(wallNow());
        const int target = weekday * 1440 + hour * 60 + minute;
        int delta = (target - now.minuteOfWeek() + 10080) % 10080;
        if (delta == 0)
            delta = 10080;
        advance(std::chrono::minutes(delta));
    }

private:
    mutable std::mutex m_mutex;
    std::chrono::steady_clock::time_point m_steady{std::chrono::hours(1000)};
    std::chrono::system_clock::time_point m_wall{std::chrono::seconds(1704067200)}; // Mon 2024-01-01 00:00 UTC
};

} // namespace rookery::test
