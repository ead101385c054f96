// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rookery {

/// float32 values as small integer codes (8 or 4 bits) with one power-of-two scale per
/// block of kBlockValues values: a little over a quarter, or an eighth, of the bytes.
/// Each block's scale is the smallest 2^e with every |value| <= M * 2^e (M = 127 for
/// 8-bit codes, 7 for 4-bit ones), so a value becomes round(value / 2^e) * 2^e: within
/// 2^(e-1) of it, rounded to nearest, ties to even. Since the scale is a power of two, a
/// value already on its block's grid travels exactly: rounding twice is rounding once.
///
/// The bytes: the codes (8-bit: one byte per value; 4-bit: two values per byte, the
/// even one in the low nibble, two's complement), then the exponents (int8, one per
/// block, e in [kBlockMinExponent, kBlockMaxExponent], so that every code decodes to a
/// finite float).
///
/// Thread safety: pure functions.
enum class CodeBits : uint8_t { Four = 4, Eight = 8 };

inline constexpr size_t kBlockValues = 64;
inline constexpr int kBlockMinExponent = -128;
inline constexpr int kBlockMaxExponent = 120;

/// The bytes `count` values take.
constexpr size_t intBlocksBytes(size_t count, CodeBits bits)
{
    const size_t codes = bits == CodeBits::Eight ? count : (count + 1) / 2;
    return codes + (count + kBlockValues - 1) / kBlockValues;
}

/// Encodes `in` into `out` (intBlocksBytes(in.size(), bits) bytes). Returns false,
/// leaving `out` unspecified, when a value is not finite or above M * 2^kBlockMaxExponent
/// (about 1.7e38 for 8-bit codes, 9.3e36 for 4-bit ones): such values have no code.
bool floatToIntBlocks(std::span<const float> in, CodeBits bits, uint8_t *out);

/// Decodes `count` values from `in` (intBlocksBytes(count, bits) bytes) into `out`.
/// Returns false when an exponent is out of range (then `out` is unspecified);
/// otherwise every value is finite.
bool intBlocksToFloat(std::span<const uint8_t> in, size_t count, CodeBits bits, float *out);

/// Rounds each value in place to its block's grid (as floatToIntBlocks and back), so
/// that sending it as such blocks loses nothing more. A block holding a value that has
/// no code (see floatToIntBlocks) is left as it is.
void roundToIntBlocks(std::span<float> values, CodeBits bits);

} // namespace rookery
