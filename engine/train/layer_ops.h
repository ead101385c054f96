// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/: includes LibTorch. The arithmetic of every layer kind, in one
// place, for the module that owns the weights (LayerStack) and for a stage that runs a
// microbatch on a stashed copy of them (StageCompute): both give the same numbers.
#pragma once

#include <torch/torch.h>

#include "engine/model/model_spec.h"

namespace rookery::train {

/// How many tensors layer `layer` holds, in the order applyLayer() takes them.
size_t layerTensorCount(const model::LayerSpec &layer);

/// Applies `layer` to the batch `x` with its tensors `w[0 .. layerTensorCount)`.
/// `training` switches Dropout on; every other kind ignores it.
torch::Tensor applyLayer(const model::LayerSpec &layer, const torch::Tensor &x, const torch::Tensor *w, bool training);

} // namespace rookery::train
