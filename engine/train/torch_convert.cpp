// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/torch_convert.h"

#include <cstring>

#include "engine/common/error.h"

namespace rookery::train {

c10::ScalarType toScalarType(DType dtype)
{
    switch (dtype) {
    case DType::Float32:
        return torch::kFloat32;
    case DType::Float16:
        return torch::kFloat16;
    case DType::BFloat16:
        return torch::kBFloat16;
    case DType::Int64:
        return torch::kInt64;
    case DType::UInt8:
        return torch::kUInt8;
    }
    throw Error("unsupported tensor element type");
}

DType fromScalarType(c10::ScalarType type)
{
    switch (type) {
    case torch::kFloat32:
        return DType::Float32;
    case torch::kFloat16:
        return DType::Float16;
    case torch::kBFloat16:
        return DType::BFloat16;
    case torch::kInt64:
        return DType::Int64;
    case torch::kUInt8:
        return DType::UInt8;
    default:
        throw Error(std::string("unsupported tensor element type ") + c10::toString(type));
    }
}

NamedTensor toNamed(const std::string &name, const torch::Tensor &tensor)
{
    const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    NamedTensor out;
    out.name = name;
    out.dtype = fromScalarType(t.scalar_type());
    out.shape.assign(t.sizes().begin(), t.sizes().end());
    out.data.resize(size_t(t.nbytes()));
    if (t.nbytes() > 0)
        std::memcpy(out.data.data(), t.data_ptr(), t.nbytes());
    return out;
}

static void checkSize(const NamedTensor &named)
{
    const size_t expected = size_t(named.elements()) * dtypeSize(named.dtype);
    if (named.data.size() != expected)
        throw Error("tensor '" + named.name + "' holds " + std::to_string(named.data.size()) +
                    " bytes, but its shape " + shapeText(named.shape) + " needs " + std::to_string(expected));
}

torch::Tensor fromNamed(const NamedTensor &named)
{
    checkSize(named);
    torch::Tensor t = torch::empty(named.shape, torch::TensorOptions().dtype(toScalarType(named.dtype)));
    if (!named.data.empty())
        std::memcpy(t.data_ptr(), named.data.data(), named.data.size());
    return t;
}

void checkCompatible(const torch::Tensor &target, const NamedTensor &named)
{
    checkSize(named);
    if (fromScalarType(target.scalar_type()) != named.dtype)
        throw Error("tensor '" + named.name + "' has element type " + std::string(dtypeName(named.dtype)) +
                    ", expected " + c10::toString(target.scalar_type()));
    if (!std::equal(target.sizes().begin(), target.sizes().end(), named.shape.begin(), named.shape.end()))
        throw Error("tensor '" + named.name + "' has shape " + shapeText(named.shape) + ", expected " +
                    shapeText(std::vector<int64_t>(target.sizes().begin(), target.sizes().end())));
}

void copyInto(torch::Tensor &target, const NamedTensor &named)
{
    checkCompatible(target, named);
    torch::NoGradGuard noGrad;
    target.copy_(fromNamed(named));
}

TensorBuffer toBuffer(const torch::Tensor &tensor)
{
    auto owner = std::make_shared<torch::Tensor>(tensor.detach().to(torch::kCPU).contiguous());
    TensorBuffer b;
    b.dtype = fromScalarType(owner->scalar_type());
    b.shape.assign(owner->sizes().begin(), owner->sizes().end());
    b.data = static_cast<const uint8_t *>(owner->data_ptr());
    b.bytes = size_t(owner->nbytes());
    b.owner = std::move(owner);
    return b;
}

torch::Tensor fromBuffer(const TensorBuffer &buffer)
{
    const size_t expected = size_t(buffer.elements()) * dtypeSize(buffer.dtype);
    if (buffer.bytes != expected || (expected > 0 && buffer.data == nullptr))
        throw Error("tensor buffer holds " + std::to_string(buffer.bytes) + " bytes, but its shape " +
                    shapeText(buffer.shape) + " needs " + std::to_string(expected));
    std::shared_ptr<const void> owner = buffer.owner;
    return torch::from_blob(
        const_cast<uint8_t *>(buffer.data), buffer.shape, [owner](void *) mutable { owner.reset(); },
        torch::TensorOptions().dtype(toScalarType(buffer.dtype)));
}

} // namespace rookery::train
