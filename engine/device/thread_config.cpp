// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/thread_config.h"

#include <algorithm>

namespace rookery::device {

std::string ThreadConfig::describe() const
{
    return "torch " + std::to_string(torchThreads) + " x blas " + std::to_string(blasThreads);
}

ThreadConfig defaultThreadConfig(int cores)
{
    cores = std::max(1, cores);
    return {1, cores};
}

} // namespace rookery::device
