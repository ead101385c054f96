// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/batch_source.h"

namespace rookery::train {

BatchSource::BatchSource(const data::ImageDataset &d)
{
    auto bytes =
        torch::from_blob(const_cast<uint8_t *>(d.pixels.data()), {d.count, d.channels, d.rows, d.cols}, torch::kUInt8);
    m_images = bytes.to(torch::kFloat32).div_(255.0f).sub_(d.mean).div_(d.stddev);
    m_labels = torch::from_blob(const_cast<uint8_t *>(d.labels.data()), {d.count}, torch::kUInt8).to(torch::kInt64);
}

Batch BatchSource::gather(const std::vector<int64_t> &indices) const
{
    auto idx = torch::from_blob(const_cast<int64_t *>(indices.data()), {int64_t(indices.size())}, torch::kInt64);
    return {m_images.index_select(0, idx), m_labels.index_select(0, idx)};
}

Batch BatchSource::slice(int64_t first, int64_t count) const
{
    return {m_images.narrow(0, first, count), m_labels.narrow(0, first, count)};
}

} // namespace rookery::train
