// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/common/named_tensor.h"

namespace rookery {

/// A tensor's bytes owned by someone else, passed without copying: a torch tensor
/// leaving a pipeline stage, a frame that arrived from the network. `owner` keeps the
/// bytes alive for as long as any copy of the buffer exists. Little-endian, row-major,
/// contiguous.
///
/// Thread safety: a plain value; the bytes must not be written while it is shared.
struct TensorBuffer
{
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    std::shared_ptr<const void> owner;
    const uint8_t *data = nullptr;
    size_t bytes = 0;

    std::span<const uint8_t> span() const { return {data, bytes}; }
    bool empty() const { return data == nullptr; }
    int64_t elements() const
    {
        int64_t n = 1;
        for (auto d : shape)
            n *= d;
        return n;
    }
};

/// A buffer that owns a vector of bytes.
inline TensorBuffer tensorBufferFromBytes(DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes)
{
    auto storage = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    TensorBuffer b;
    b.dtype = dtype;
    b.shape = std::move(shape);
    b.data = storage->data();
    b.bytes = storage->size();
    b.owner = std::move(storage);
    return b;
}

} // namespace rookery
