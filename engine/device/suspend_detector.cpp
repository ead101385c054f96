// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/suspend_detector.h"

#include <ctime>

namespace rookery::device {

namespace {

std::chrono::nanoseconds read(clockid_t id)
{
    timespec ts{};
    ::clock_gettime(id, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

} // namespace

SuspendDetector::Readings SuspendDetector::systemReadings()
{
    return [] { return std::pair{read(CLOCK_MONOTONIC), read(CLOCK_BOOTTIME)}; };
}

SuspendDetector::SuspendDetector(Readings readings, std::chrono::milliseconds threshold)
    : m_readings(std::move(readings))
    , m_threshold(threshold)
{
    std::tie(m_monotonic, m_boot) = m_readings();
}

std::optional<std::chrono::milliseconds> SuspendDetector::poll()
{
    const auto [monotonic, boot] = m_readings();
    const auto asleep = (boot - m_boot) - (monotonic - m_monotonic);
    m_monotonic = monotonic;
    m_boot = boot;
    if (asleep > m_threshold)
        return std::chrono::duration_cast<std::chrono::milliseconds>(asleep);
    return std::nullopt;
}

} // namespace rookery::device
