// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/named_tensor.h"

#include "engine/common/error.h"

namespace rookery {

size_t dtypeSize(DType dtype)
{
    switch (dtype) {
    case DType::Float32:
        return 4;
    case DType::Float16:
        return 2;
    case DType::BFloat16:
        return 2;
    case DType::Int64:
        return 8;
    case DType::UInt8:
        return 1;
    }
    return 0;
}

std::string_view dtypeName(DType dtype)
{
    switch (dtype) {
    case DType::Float32:
        return "float32";
    case DType::Float16:
        return "float16";
    case DType::BFloat16:
        return "bfloat16";
    case DType::Int64:
        return "int64";
    case DType::UInt8:
        return "uint8";
    }
    return "unknown";
}

DType dtypeFromCode(int code)
{
    switch (code) {
    case 1:
        return DType::Float32;
    case 2:
        return DType::Float16;
    case 3:
        return DType::BFloat16;
    case 4:
        return DType::Int64;
    case 5:
        return DType::UInt8;
    default:
        throw Error("unknown tensor element type code " + std::to_string(code));
    }
}

int64_t NamedTensor::elements() const
{
    int64_t n = 1;
    for (auto d : shape)
        n *= d;
    return n;
}

std::string shapeText(const std::vector<int64_t> &shape)
{
    std::string s;
    for (auto d : shape)
        s += (s.empty() ? "" : "x") + std::to_string(d);
    return s.empty() ? "scalar" : s;
}

} // namespace rookery
