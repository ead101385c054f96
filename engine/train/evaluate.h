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

/// The batch a root evaluates `spec` in: as many samples (16 to 1,000) as keep the
/// largest tensor a layer makes (its output, or what it keeps inside, as layerCosts
/// counts them) within `budgetBytes`. A batch of 1,000 through a 64-channel 28x28
/// convolution is 200 MB a tensor; the whole-model test at the root should not need
/// gigabytes that no plan counted.
int64_t evaluationBatch(const model::ModelSpec &spec, uint64_t budgetBytes = uint64_t(32) << 20);

} // namespace rookery::train
