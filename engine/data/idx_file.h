// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace rookery::data {

/// An unsigned-byte IDX array (the MNIST file format), possibly gzip-compressed.
struct IdxArray
{
    std::vector<uint32_t> dims;
    std::vector<uint8_t> values;
};

/// Largest array we agree to allocate for, checked against the header before reading.
inline constexpr uint64_t kMaxIdxBytes = uint64_t(1) << 31;

/// Reads an IDX file (.gz or plain) and validates it: the magic number (unsigned bytes,
/// `expectedDims` dimensions), every dimension non-zero, the total size below
/// kMaxIdxBytes, and exactly that many bytes of data, no fewer and no more.
/// Throws rookery::Error naming the file and what is wrong.
///
/// Thread safety: reentrant.
IdxArray readIdxFile(const std::filesystem::path &path, int expectedDims);

} // namespace rookery::data
