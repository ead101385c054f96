// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rookery::data {

/// A labelled set of single-channel 8-bit images held in memory.
///
/// Thread safety: immutable after loading; share it freely across threads.
struct ImageDataset
{
    std::string name;
    int64_t count = 0;
    int channels = 1;
    int rows = 0;
    int cols = 0;
    int classes = 0;
    /// Per-channel normalisation applied when pixels become floats: (x/255 - mean) / std.
    float mean = 0.f;
    float stddev = 1.f;
    std::vector<uint8_t> pixels; // count * channels * rows * cols
    std::vector<uint8_t> labels; // count, each < classes

    int64_t pixelsPerImage() const { return int64_t(channels) * rows * cols; }
};

enum class Split { Train, Test };

/// Loads Fashion-MNIST from `dir` (train-*/t10k-*-idx?-ubyte.gz). Checks that images
/// and labels agree in count, images are 28x28 and labels lie in 0..9. Throws
/// rookery::Error naming the bad file.
ImageDataset loadFashionMnist(const std::filesystem::path &dir, Split split);

/// The first `count` samples of `source` (for quick runs and tests).
ImageDataset headOf(const ImageDataset &source, int64_t count);

} // namespace rookery::data
