// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <span>

namespace rookery {

/// float32 <-> float16 / bfloat16 conversions for compressed links and rings. Rounding is to
/// nearest, ties to even (as torch's .half() and .bfloat16()); NaN stays NaN, overflow
/// becomes infinity. `out` must have room for `in.size()` elements.
///
/// Thread safety: pure functions.
void floatToHalf(std::span<const float> in, uint16_t *out);
void halfToFloat(std::span<const uint16_t> in, float *out);
void floatToBfloat16(std::span<const float> in, uint16_t *out);
void bfloat16ToFloat(std::span<const uint16_t> in, float *out);

/// Rounds each value in place to the nearest bfloat16 (as floatToBfloat16 and back), so
/// that sending it as bf16 loses nothing more.
void roundToBfloat16(std::span<float> values);

} // namespace rookery
