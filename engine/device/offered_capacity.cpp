// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/offered_capacity.h"

#include <algorithm>

namespace rookery::device {

CapabilityProfile offeredProfile(CapabilityProfile p, const GovernorSettings &caps, uint64_t residentBytes)
{
    if (caps.memoryCapMiB > 0) {
        const uint64_t cap = uint64_t(caps.memoryCapMiB) << 20;
        const uint64_t held = residentBytes + kTrainingAllowanceBytes;
        p.ramAvailableBytes = std::min<uint64_t>(p.ramAvailableBytes, cap > held ? cap - held : 0);
    }
    for (auto &gpu : p.gpus)
        gpu.gflops = 0;
    return p;
}

} // namespace rookery::device
