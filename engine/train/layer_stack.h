// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/: includes LibTorch. A ModelSpec (or a slice of one) as a module.
#pragma once

#include <torch/torch.h>

#include "engine/model/model_spec.h"

namespace rookery::train {

/// The layers of a spec as torch modules, registered under their index in the whole
/// model ("3.weight"), so a stage's parameters keep the same names as in the unsplit
/// model. Initialisation is seeded per layer from (seed, global index): any slice of a
/// model starts with exactly the weights the unsplit model has for those layers.
class LayerStackImpl : public torch::nn::Module
{
public:
    /// `spec` holds the layers; `firstIndex` is the global index of its first layer.
    LayerStackImpl(const model::ModelSpec &spec, size_t firstIndex, uint64_t seed);

    /// Applies the layers with applyLayer(), Dropout only in training mode.
    torch::Tensor forward(torch::Tensor x);

    size_t firstIndex() const { return m_firstIndex; }
    size_t layerCount() const { return m_layers.size(); }

private:
    struct Layer
    {
        model::LayerSpec spec;
        std::shared_ptr<torch::nn::Module> weights; ///< null for a layer without any
    };
    std::vector<Layer> m_layers;
    size_t m_firstIndex;
};
TORCH_MODULE(LayerStack);

} // namespace rookery::train
