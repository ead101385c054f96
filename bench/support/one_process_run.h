// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>

#include "engine/data/image_dataset.h"

namespace rookery::bench {

/// The MLP trained by one process with the swarm benchmarks' settings (batch, optimizer
/// and learning-rate schedule: swarm_bench_run.h): the baseline the swarms' samples to
/// 85% are held against.
struct OneProcessOutcome
{
    double samplesPerSecond = 0;  ///< training only: the clock stops while it tests
    int64_t samplesToTarget = -1; ///< when a test first reached 85%; -1: not within the run
    double finalAccuracy = 0;
};

/// Trains for `steps`, testing on all of `test` every `evalEvery` steps, with the
/// threads as they are set in this process.
OneProcessOutcome runOneProcess(const std::shared_ptr<const data::ImageDataset> &train, const data::ImageDataset &test,
                                int64_t steps, int64_t evalEvery);

} // namespace rookery::bench
