// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/value_precision.h"

#include <string>

#include "engine/common/error.h"
#include "engine/common/half_float.h"
#include "engine/common/int_blocks.h"

namespace rookery {

std::string_view precisionName(ValuePrecision p)
{
    switch (p) {
    case ValuePrecision::Float32:
        return "none";
    case ValuePrecision::Bf16:
        return "bf16";
    case ValuePrecision::Int8:
        return "int8";
    case ValuePrecision::Int4:
        return "int4";
    }
    return "?";
}

ValuePrecision precisionFromName(std::string_view name)
{
    for (const auto p : {ValuePrecision::Float32, ValuePrecision::Bf16, ValuePrecision::Int8, ValuePrecision::Int4})
        if (precisionName(p) == name)
            return p;
    throw Error("unknown ring compression '" + std::string(name) + "' (none, bf16, int8, int4)");
}

void roundForPrecision(std::span<float> values, ValuePrecision p)
{
    if (p == ValuePrecision::Bf16)
        roundToBfloat16(values);
    else if (p == ValuePrecision::Int8)
        roundToIntBlocks(values, CodeBits::Eight);
    else if (p == ValuePrecision::Int4)
        roundToIntBlocks(values, CodeBits::Four);
}

size_t precisionBytes(size_t count, ValuePrecision p)
{
    switch (p) {
    case ValuePrecision::Float32:
        break;
    case ValuePrecision::Bf16:
        return count * 2;
    case ValuePrecision::Int8:
        return intBlocksBytes(count, CodeBits::Eight);
    case ValuePrecision::Int4:
        return intBlocksBytes(count, CodeBits::Four);
    }
    return count * sizeof(float);
}

} // namespace rookery
