// SPDX-License-Identifier: GPL-3.0-or-later
// Baselines written in plain LibTorch, kept in a library so that bench executables do
// not include torch (executables are -fPIE and cannot share the engine's PCH).
#pragma once

#include "engine/data/image_dataset.h"

namespace rookery::bench {

/// Samples/s of the plainest LibTorch loop (Sequential 784-512-512-10, torch::optim::SGD
/// with momentum, index_select batches) over `steps` steps of `batch`, after a warm-up,
/// on the calling thread with whatever thread counts are set.
double bareMlpSamplesPerSecond(const data::ImageDataset &dataset, int steps, int64_t batch, double lr, double momentum);

} // namespace rookery::bench
