// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/image_dataset.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/data/idx_file.h"

namespace rookery::data {

ImageDataset loadFashionMnist(const std::filesystem::path &dir, Split split)
{
    const std::string prefix = split == Split::Train ? "train" : "t10k";
    const auto imagesPath = dir / (prefix + "-images-idx3-ubyte.gz");
    const auto labelsPath = dir / (prefix + "-labels-idx1-ubyte.gz");

    IdxArray images = readIdxFile(imagesPath, 3);
    IdxArray labels = readIdxFile(labelsPath, 1);
    if (images.dims[1] != 28 || images.dims[2] != 28)
        throw Error("dataset file " + imagesPath.string() + ": images are " + std::to_string(images.dims[1]) + "x" +
                    std::to_string(images.dims[2]) + ", expected 28x28");
    if (images.dims[0] != labels.dims[0])
        throw Error("dataset files disagree: " + imagesPath.string() + " holds " + std::to_string(images.dims[0]) +
                    " images but " + labelsPath.string() + " holds " + std::to_string(labels.dims[0]) + " labels");
    auto bad = std::find_if(labels.values.begin(), labels.values.end(), [](uint8_t l) { return l > 9; });
    if (bad != labels.values.end())
        throw Error("dataset file " + labelsPath.string() + ": label " + std::to_string(*bad) + " at index " +
                    std::to_string(bad - labels.values.begin()) + " is outside 0..9");

    ImageDataset out;
    out.name = "fashion-mnist/" + prefix;
    out.count = images.dims[0];
    out.rows = 28;
    out.cols = 28;
    out.classes = 10;
    out.mean = 0.2860f;
    out.stddev = 0.3530f;
    out.pixels = std::move(images.values);
    out.labels = std::move(labels.values);
    return out;
}

ImageDataset headOf(const ImageDataset &source, int64_t count)
{
    ImageDataset out = source;
    count = std::clamp<int64_t>(count, 0, source.count);
    out.count = count;
    out.pixels.resize(size_t(count * source.pixelsPerImage()));
    out.labels.resize(size_t(count));
    return out;
}

} // namespace rookery::data
