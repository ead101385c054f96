// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/clock.h"

#include <array>
#include <cstdio>
#include <ctime>

namespace rookery::device {

WeekTime WeekTime::fromMinuteOfWeek(int m)
{
    m = ((m % 10080) + 10080) % 10080;
    return {m / 1440, m % 1440};
}

std::string WeekTime::describe() const
{
    static constexpr std::array<const char *, 7> kDays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s %02d:%02d", kDays[size_t(weekday % 7)], minute / 60, minute % 60);
    return buf;
}

std::string Clock::timeOfDay(std::chrono::system_clock::time_point t) const
{
    const WeekTime w = weekTimeOf(t);
    char buf[16];
    std::snprintf(buf, sizeof buf, "%02d:%02d", w.minute / 60, w.minute % 60);
    return buf;
}

WeekTime SystemClock::weekTimeOf(std::chrono::system_clock::time_point t) const
{
    const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
    std::tm local{};
    localtime_r(&seconds, &local);
    // tm_wday counts from Sunday; the schedule's week starts on Monday.
    return {(local.tm_wday + 6) % 7, local.tm_hour * 60 + local.tm_min};
}

std::shared_ptr<const Clock> systemClock()
{
    static const auto clock = std::make_shared<SystemClock>();
    return clock;
}

} // namespace rookery::device
