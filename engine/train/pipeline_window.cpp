// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/pipeline_window.h"

#include <algorithm>
#include <cmath>

namespace rookery::train {

int pipelineWindow(const WindowInputs &in)
{
    const int floor = std::max(1, in.stages + 1);
    const int cap = std::max(floor, in.cap);
    if (!(in.bottleneckSeconds > 0) || !std::isfinite(in.bottleneckSeconds))
        return floor;
    const double trip = std::max(0.0, in.roundTripSeconds) + std::max(0.0, in.stageSecondsSum);
    // A hair below ceil: 2.0000000001 microbatches' worth of time is 2, not 3.
    const double needed = std::ceil(trip / in.bottleneckSeconds - 1e-9);
    if (!std::isfinite(needed) || needed >= double(cap))
        return cap;
    return std::clamp(int(needed), floor, cap);
}

} // namespace rookery::train
