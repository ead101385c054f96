// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rookery {

/// How float32 values that every receiver must see exactly as the sender holds them
/// (ring chunks) travel: as they are, rounded to bf16, or rounded to blocks of 8- or
/// 4-bit codes (engine/common/int_blocks.h). The sender rounds its own copy first, so
/// what arrives is what it kept.
enum class ValuePrecision : uint8_t { Float32 = 0, Bf16 = 1, Int8 = 2, Int4 = 3 };

/// "none", "bf16", "int8" or "int4" (the words of --ring-compression).
std::string_view precisionName(ValuePrecision p);
/// The inverse of precisionName; throws rookery::Error naming the word otherwise.
ValuePrecision precisionFromName(std::string_view name);

/// Rounds `values` in place to what `p` carries exactly.
void roundForPrecision(std::span<float> values, ValuePrecision p);

/// The bytes `count` values take in `p`.
size_t precisionBytes(size_t count, ValuePrecision p);

} // namespace rookery
