// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/offered_capacity.h"

#include <algorithm>

namespace rookery::device {

CapabilityProfile offeredProfile(CapabilityProfile p, const GovernorSettings &caps)
{
    const Limits &limits = caps.runOnlyWhenIdle ? caps.whenIdle : caps.whenActive;
    if (limits.maxCores > 0 && p.gflopsOneThread > 0)
        p.gflopsAllThreads = std::min(p.gflopsAllThreads, p.gflopsOneThread * double(limits.maxCores));
    const double share = double(std::clamp<int64_t>(limits.cpuPercent, 1, 100)) / 100.0;
    p.gflopsAllThreads *= share;
    p.gflopsOneThread *= share;
    if (caps.memoryCapMiB > 0)
        p.ramAvailableBytes = std::min<uint64_t>(p.ramAvailableBytes, uint64_t(caps.memoryCapMiB) << 20);
    for (auto &gpu : p.gpus)
        gpu.gflops = 0;
    return p;
}

} // namespace rookery::device
