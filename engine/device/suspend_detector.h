// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <utility>

namespace rookery::device {

/// Notices that the computer slept. On Linux the monotonic clock stops while the
/// machine is suspended and the boot clock does not, so the two drift apart by the
/// time spent asleep; a drift beyond `threshold` between two polls is a suspension.
///
/// Thread safety: one thread at a time.
class SuspendDetector
{
public:
    /// Monotonic and boot clock readings, taken together.
    using Readings = std::function<std::pair<std::chrono::nanoseconds, std::chrono::nanoseconds>()>;

    explicit SuspendDetector(Readings readings = systemReadings(),
                             std::chrono::milliseconds threshold = std::chrono::seconds(2));

    /// How long the computer was asleep since the last poll (or since construction),
    /// when that is more than the threshold.
    std::optional<std::chrono::milliseconds> poll();

    /// CLOCK_MONOTONIC and CLOCK_BOOTTIME.
    static Readings systemReadings();

private:
    Readings m_readings;
    std::chrono::milliseconds m_threshold;
    std::chrono::nanoseconds m_monotonic{0}, m_boot{0};
};

} // namespace rookery::device
