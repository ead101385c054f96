// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/offered_capacity.h"

#include <algorithm>

namespace rookery::device {

CapabilityProfile offeredProfile(CapabilityProfile p, const GovernorSettings &caps)
{
    if (caps.memoryCapMiB > 0)
        p.ramAvailableBytes = std::min<uint64_t>(p.ramAvailableBytes, uint64_t(caps.memoryCapMiB) << 20);
    const Limits &l = caps.whenActive;
    if (l.maxCores > 0 && p.gflopsOneThread > 0) {
        p.gflopsAllThreads = std::min(p.gflopsAllThreads, p.gflopsOneThread * double(l.maxCores));
        if (p.allowedCores > 0)
            p.allowedCores = int(std::min<int64_t>(p.allowedCores, l.maxCores));
    }
    if (l.cpuPercent > 0 && l.cpuPercent < 100) {
        p.gflopsAllThreads *= double(l.cpuPercent) / 100;
        p.gflopsOneThread *= double(l.cpuPercent) / 100;
    }
    for (auto &gpu : p.gpus)
        gpu.gflops = 0;
    return p;
}

} // namespace rookery::device
