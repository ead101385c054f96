// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/data/image_dataset.h"
#include "engine/model/model_spec.h"
#include "engine/train/trainer.h"

namespace rookery::train {

/// Loss and accuracy over `test` of the whole model `spec` with the given parameters
/// (named by global layer index, as every stage names them): how a swarm's root checks
/// the model its pipeline holds. Runs on the calling thread, without gradients.
/// Throws rookery::Error when a parameter is missing or misshapen.
EvalMetrics evaluateParameters(const model::ModelSpec &spec, const std::vector<NamedTensor> &parameters,
                               const data::ImageDataset &test, int64_t batchSize = 1000);

} // namespace rookery::train
