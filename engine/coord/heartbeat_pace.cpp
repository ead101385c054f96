// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/heartbeat_pace.h"

#include <algorithm>
#include <cmath>

namespace rookery::coord {

std::chrono::milliseconds heartbeatPace(std::chrono::milliseconds base, size_t online, double budgetPerSecond)
{
    constexpr int64_t kStepMs = 500;
    constexpr std::chrono::milliseconds kMost{20'000}; // links time out after 30 s of silence
    if (!(budgetPerSecond > 0) || base >= kMost)
        return base;
    const double wantedMs = double(online) * 1000.0 / budgetPerSecond;
    if (wantedMs <= double(base.count()))
        return base;
    const auto stepped = int64_t(std::ceil(wantedMs / double(kStepMs))) * kStepMs;
    return std::clamp(std::chrono::milliseconds(stepped), base, kMost);
}

std::chrono::milliseconds silenceLimit(std::chrono::milliseconds timeout, std::chrono::milliseconds interval)
{
    return std::max(timeout, interval * 3);
}

} // namespace rookery::coord
