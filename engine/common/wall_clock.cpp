// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/wall_clock.h"

#include <chrono>

namespace rookery {

int64_t nowMs()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace rookery
