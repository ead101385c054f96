// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/offered_capacity.h"

#include <algorithm>

namespace rookery::device {

const Limits &offeredLimits(const GovernorSettings &caps)
{
    return caps.runOnlyWhenIdle ? caps.whenIdle : caps.whenActive;
}

CapabilityProfile offeredProfile(CapabilityProfile p, const GovernorSettings &caps, uint64_t residentBytes)
{
    if (caps.memoryCapMiB > 0) {
        const uint64_t cap = uint64_t(caps.memoryCapMiB) << 20;
        const uint64_t held = residentBytes + kTrainingAllowanceBytes;
        p.ramAvailableBytes = std::min<uint64_t>(p.ramAvailableBytes, cap > held ? cap - held : 0);
    }
    const Limits &limits = offeredLimits(caps);
    if (limits.maxCores > 0 && p.gflopsOneThread > 0)
        p.gflopsAllThreads = std::min(p.gflopsAllThreads, p.gflopsOneThread * double(limits.maxCores));
    const double share = double(std::clamp<int64_t>(limits.cpuPercent, 1, 100)) / 100;
    p.gflopsAllThreads *= share;
    p.gflopsOneThread *= share;
    for (auto &gpu : p.gpus)
        gpu.gflops = 0;
    return p;
}

} // namespace rookery::device
