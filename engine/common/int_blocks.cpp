// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/int_blocks.h"

#include <algorithm>
#include <cmath>

namespace rookery {
namespace {

constexpr int kNoCode = 999;

double largestCode(CodeBits bits) { return bits == CodeBits::Eight ? 127.0 : 7.0; }

// The smallest e >= kBlockMinExponent with max|v| <= M * 2^e, or kNoCode when a value
// is not finite or e would pass kBlockMaxExponent. Exact: products with powers of two are
// exact in double.
int blockExponent(std::span<const float> block, CodeBits bits)
{
    const double m = largestCode(bits);
    double largest = 0;
    for (float v : block) {
        if (!std::isfinite(v))
            return kNoCode;
        largest = std::max(largest, double(std::fabs(v)));
    }
    if (largest == 0)
        return kBlockMinExponent;
    int e = std::max(kBlockMinExponent, int(std::ceil(std::log2(largest / m))));
    while (largest > std::ldexp(m, e))
        ++e;
    while (e > kBlockMinExponent && largest <= std::ldexp(m, e - 1))
        --e;
    return e > kBlockMaxExponent ? kNoCode : e;
}

int code(float v, int e) { return int(std::nearbyint(std::ldexp(double(v), -e))); }

size_t blocksOf(size_t count) { return (count + kBlockValues - 1) / kBlockValues; }

// Where the exponents start.
size_t codeBytes(size_t count, CodeBits bits) { return bits == CodeBits::Eight ? count : (count + 1) / 2; }

} // namespace

bool floatToIntBlocks(std::span<const float> in, CodeBits bits, uint8_t *out)
{
    const size_t exponents = codeBytes(in.size(), bits);
    std::fill(out, out + exponents, uint8_t(0));
    for (size_t b = 0; b < blocksOf(in.size()); ++b) {
        const size_t begin = b * kBlockValues, end = std::min(in.size(), begin + kBlockValues);
        const int e = blockExponent(in.subspan(begin, end - begin), bits);
        if (e == kNoCode)
            return false;
        for (size_t i = begin; i < end; ++i) {
            const int c = code(in[i], e);
            if (bits == CodeBits::Eight)
                out[i] = uint8_t(int8_t(c));
            else
                out[i / 2] |= uint8_t((c & 0xf) << (i % 2 ? 4 : 0));
        }
        out[exponents + b] = uint8_t(int8_t(e));
    }
    return true;
}

bool intBlocksToFloat(std::span<const uint8_t> in, size_t count, CodeBits bits, float *out)
{
    const size_t exponents = codeBytes(count, bits);
    for (size_t begin = 0; begin < count; begin += kBlockValues) {
        const int e = int8_t(in[exponents + begin / kBlockValues]);
        if (e > kBlockMaxExponent)
            return false;
        const float scale = std::ldexp(1.0f, e); // 2^-128 is subnormal, still exact
        for (size_t i = begin; i < std::min(count, begin + kBlockValues); ++i) {
            int c;
            if (bits == CodeBits::Eight) {
                c = int8_t(in[i]);
            } else {
                c = (in[i / 2] >> (i % 2 ? 4 : 0)) & 0xf;
                c = c >= 8 ? c - 16 : c;
            }
            out[i] = float(c) * scale;
        }
    }
    return true;
}

void roundToIntBlocks(std::span<float> values, CodeBits bits)
{
    for (size_t begin = 0; begin < values.size(); begin += kBlockValues) {
        const auto block = values.subspan(begin, std::min(kBlockValues, values.size() - begin));
        const int e = blockExponent(block, bits);
        if (e == kNoCode)
            continue;
        for (float &v : block)
            v = float(std::ldexp(double(code(v, e)), e));
    }
}

} // namespace rookery
