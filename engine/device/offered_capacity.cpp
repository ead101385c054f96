// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/offered_capacity.h"

#include <algorithm>

namespace rookery::device {

CapabilityProfile offeredProfile(CapabilityProfile p, const GovernorSettings &caps)
{
    if (caps.memoryCapMiB > 0)
        p.ramAvailableBytes = std::min<uint64_t>(p.ramAvailableBytes, uint64_t(caps.memoryCapMiB) << 20);
    for (auto &gpu : p.gpus)
        gpu.gflops = 0;
    return p;
}

} // namespace rookery::device
