// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/data/epoch_sampler.h"
#include "engine/model/model_spec.h"
#include "engine/train/optimizer_config.h"

namespace rookery::train {

/// Everything needed to continue training exactly where it stopped: what checkpoints
/// hold. Parameters are named "<layer>.<weight|bias>", optimizer state
/// "<parameter>.<buffer>" plus "step".
///
/// Thread safety: a plain value.
struct TrainingState
{
    model::ModelSpec model;
    OptimizerConfig optimizer;
    int64_t batchSize = 0;
    uint64_t seed = 0;
    int64_t step = 0;
    data::SamplerCursor cursor;
    std::vector<uint8_t> rngState;
    std::vector<NamedTensor> parameters;
    std::vector<NamedTensor> optimizerState;
};

} // namespace rookery::train
