// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/batch_source.h"

#include "engine/common/error.h"

namespace rookery::train {
namespace {

torch::Tensor pixelsOf(const data::ImageDataset &d)
{
    return torch::from_blob(const_cast<uint8_t *>(d.pixels.data()), {d.count, d.channels, d.rows, d.cols},
                            torch::kUInt8);
}

torch::Tensor labelsOf(const data::ImageDataset &d)
{
    return torch::from_blob(const_cast<uint8_t *>(d.labels.data()), {d.count}, torch::kUInt8);
}

} // namespace

BatchSource::BatchSource(std::shared_ptr<const data::ImageDataset> dataset)
    : m_keep(std::move(dataset))
{
    if (!m_keep)
        throw Error("no data set to read batches from");
    m_pixels = pixelsOf(*m_keep);
    m_labels = labelsOf(*m_keep);
    m_mean = m_keep->mean;
    m_stddev = m_keep->stddev;
}

BatchSource::BatchSource(const data::ImageDataset &d)
    : m_pixels(pixelsOf(d).clone())
    , m_labels(labelsOf(d).clone())
    , m_mean(d.mean)
    , m_stddev(d.stddev)
{ }

Batch BatchSource::normalised(const torch::Tensor &pixels, const torch::Tensor &labels) const
{
    return {pixels.to(torch::kFloat32).div_(255.0f).sub_(m_mean).div_(m_stddev), labels.to(torch::kInt64)};
}

Batch BatchSource::gather(const std::vector<int64_t> &indices) const
{
    auto idx = torch::from_blob(const_cast<int64_t *>(indices.data()), {int64_t(indices.size())}, torch::kInt64);
    return normalised(m_pixels.index_select(0, idx), m_labels.index_select(0, idx));
}

Batch BatchSource::slice(int64_t first, int64_t count) const
{
    return normalised(m_pixels.narrow(0, first, count), m_labels.narrow(0, first, count));
}

} // namespace rookery::train
