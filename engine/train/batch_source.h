// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/: includes LibTorch.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "engine/data/image_dataset.h"

namespace rookery::train {

struct Batch
{
    torch::Tensor images; // [B, C, H, W] float32, normalised
    torch::Tensor labels; // [B] int64
};

/// A data set converted once to normalised float32, from which batches are gathered.
/// Converting up front costs 188 MB for Fashion-MNIST's training set and saves a
/// conversion on every step.
class BatchSource
{
public:
    explicit BatchSource(const data::ImageDataset &dataset);

    Batch gather(const std::vector<int64_t> &indices) const;
    /// Samples [first, first + count) without copying.
    Batch slice(int64_t first, int64_t count) const;
    int64_t size() const { return m_images.size(0); }

private:
    torch::Tensor m_images;
    torch::Tensor m_labels;
};

} // namespace rookery::train
