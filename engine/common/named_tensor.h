// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rookery {

/// Element types that cross the engine's boundaries (checkpoints, the wire).
enum class DType : uint8_t { Float32 = 1, Float16 = 2, BFloat16 = 3, Int64 = 4, UInt8 = 5 };

size_t dtypeSize(DType dtype);
std::string_view dtypeName(DType dtype);
/// Throws rookery::Error for codes that name no DType.
DType dtypeFromCode(int code);

/// A tensor as plain bytes: little-endian, row-major, contiguous. Used where a tensor
/// leaves the trainer (checkpoints, tests); torch types never appear in public headers.
///
/// Thread safety: a plain value.
struct NamedTensor
{
    std::string name;
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;

    int64_t elements() const;
    bool operator==(const NamedTensor &) const = default;
};

/// "3x4" for {3, 4}; "scalar" for {}.
std::string shapeText(const std::vector<int64_t> &shape);

} // namespace rookery
