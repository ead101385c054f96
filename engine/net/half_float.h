// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <span>

namespace rookery::net {

/// float32 <-> float16 / bfloat16 conversions for compressed links. Rounding is to
/// nearest, ties to even (as torch's .half() and .bfloat16()); NaN stays NaN, overflow
/// becomes infinity. `out` must have room for `in.size()` elements.
///
/// Thread safety: pure functions.
void floatToHalf(std::span<const float> in, uint16_t *out);
void halfToFloat(std::span<const uint16_t> in, float *out);
void floatToBfloat16(std::span<const float> in, uint16_t *out);
void bfloat16ToFloat(std::span<const uint16_t> in, float *out);

} // namespace rookery::net
