// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/: includes LibTorch.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "engine/data/image_dataset.h"

namespace rookery::train {

struct Batch
{
    torch::Tensor images; // [B, C, H, W] float32, normalised
    torch::Tensor labels; // [B] int64
};

/// Batches of a data set, normalised to float32 as they are gathered. The pixels stay
/// bytes: converting Fashion-MNIST's training set up front held 188 MB more on every
/// root, a cost no plan counted (a volunteer capped at 256 MiB could not train), to
/// save a conversion of about 50,000 values a step.
class BatchSource
{
public:
    /// Reads `dataset` in place and keeps it alive.
    explicit BatchSource(std::shared_ptr<const data::ImageDataset> dataset);
    /// Copies the bytes of `dataset` (for callers that hold it by reference).
    explicit BatchSource(const data::ImageDataset &dataset);

    Batch gather(const std::vector<int64_t> &indices) const;
    /// Samples [first, first + count).
    Batch slice(int64_t first, int64_t count) const;
    int64_t size() const { return m_pixels.size(0); }

private:
    Batch normalised(const torch::Tensor &pixels, const torch::Tensor &labels) const;

    std::shared_ptr<const data::ImageDataset> m_keep;
    torch::Tensor m_pixels; // uint8 [N, C, H, W]
    torch::Tensor m_labels; // uint8 [N]
    float m_mean = 0, m_stddev = 1;
};

} // namespace rookery::train
