// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace rookery::train {

/// What the root knows when it sizes its window of microbatches in flight.
struct WindowInputs
{
    double roundTripSeconds = 0;  ///< network round trip to the leaf and back
    double stageSecondsSum = 0;   ///< one microbatch's forward + backward, summed over the stages
    double bottleneckSeconds = 0; ///< the slowest stage's forward + backward (or link's transfer)
    int stages = 1;
    int cap = 0; ///< the most microbatches in flight (the staleness cap); below stages + 1 it is ignored
};

/// How many microbatches the root keeps in flight so that the slowest stage never waits
/// for the network: one microbatch's whole trip, ceil((round trip + sum of stage
/// times) / bottleneck), at least stages + 1 (the loopback window) and at most `cap`.
/// Staleness grows with the window (about window - 1 optimizer steps at the root), which
/// is why the cap exists. With no measurement yet (bottleneck 0) it is stages + 1.
///
/// Thread safety: a pure function.
int pipelineWindow(const WindowInputs &in);

} // namespace rookery::train
