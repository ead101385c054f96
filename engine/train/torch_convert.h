// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/: includes LibTorch. Conversions between torch tensors and the
// engine's plain NamedTensor.
#pragma once

#include <torch/torch.h>

#include "engine/common/named_tensor.h"
#include "engine/common/tensor_buffer.h"

namespace rookery::train {

c10::ScalarType toScalarType(DType dtype);
DType fromScalarType(c10::ScalarType type);

/// Copies a tensor's bytes out (contiguous, CPU).
NamedTensor toNamed(const std::string &name, const torch::Tensor &tensor);
/// A new tensor holding a copy of the bytes; checks that the size matches the shape.
torch::Tensor fromNamed(const NamedTensor &named);
/// Throws rookery::Error unless `named` has the dtype, shape and byte count of `target`.
void checkCompatible(const torch::Tensor &target, const NamedTensor &named);
/// Copies `named` into an existing tensor in place, after checkCompatible().
void copyInto(torch::Tensor &target, const NamedTensor &named);

/// A view of a tensor's bytes without copying: the buffer's owner keeps the tensor (made
/// contiguous and detached first; that copies only a non-contiguous tensor).
TensorBuffer toBuffer(const torch::Tensor &tensor);
/// A tensor over a buffer's bytes without copying; the tensor's deleter holds the
/// buffer's owner. The bytes are shared: the tensor must not be written. Throws
/// rookery::Error when the byte count does not match the shape.
torch::Tensor fromBuffer(const TensorBuffer &buffer);

} // namespace rookery::train
