// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/half_float.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rookery {
namespace {

uint32_t bits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

float fromBits(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

uint16_t halfFromFloat(float f)
{
    const uint32_t u = bits(f);
    const uint32_t sign = (u >> 16) & 0x8000;
    const uint32_t absu = u & 0x7fffffff;
    if (absu >= 0x7f800000) // inf or NaN (keep NaN quiet and non-zero)
        return uint16_t(sign | 0x7c00 | (absu > 0x7f800000 ? 0x200 | ((absu >> 13) & 0x3ff) : 0));
    if (absu >= 0x477ff000) // rounds to >= 65520: infinity
        return uint16_t(sign | 0x7c00);
    if (absu < 0x38800000) { // below the smallest normal half: subnormal or zero
        // Adding 0.5 aligns the subnormal's bits at the bottom; the FPU rounds to even.
        const float shifted = fromBits(absu) + 0.5f;
        return uint16_t(sign | (bits(shifted) - 0x3f000000));
    }
    const uint32_t mantOdd = (absu >> 13) & 1;
    const uint32_t rounded = absu + 0xc8000fff + mantOdd; // rebias exponent, round to even
    return uint16_t(sign | (rounded >> 13));
}

float floatFromHalf(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    const uint32_t mant = h & 0x3ff;
    if (exp == 0x1f)
        return fromBits(sign | 0x7f800000 | (mant << 13));
    if (exp == 0) // subnormal or zero: mant * 2^-24
        return fromBits(sign) + (sign ? -1.0f : 1.0f) * float(mant) * 5.9604644775390625e-8f;
    return fromBits(sign | ((exp + 112) << 23) | (mant << 13));
}

#if defined(__x86_64__)
bool haveF16c()
{
    // Every CPU with AVX2 has F16C, and AVX2 is a feature clang can test for too.
    static const bool have = __builtin_cpu_supports("avx2");
    return have;
}

__attribute__((target("avx,f16c"))) size_t toHalfF16c(const float *in, size_t n, uint16_t *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i), h);
    }
    return i;
}

__attribute__((target("avx,f16c"))) size_t fromHalfF16c(const uint16_t *in, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i))));
    return i;
}
#endif

} // namespace

void floatToHalf(std::span<const float> in, uint16_t *out)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (haveF16c())
        i = toHalfF16c(in.data(), in.size(), out);
#endif
    for (; i < in.size(); ++i)
        out[i] = halfFromFloat(in[i]);
}

void halfToFloat(std::span<const uint16_t> in, float *out)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (haveF16c())
        i = fromHalfF16c(in.data(), in.size(), out);
#endif
    for (; i < in.size(); ++i)
        out[i] = floatFromHalf(in[i]);
}

void floatToBfloat16(std::span<const float> in, uint16_t *out)
{
    for (size_t i = 0; i < in.size(); ++i) {
        const uint32_t u = bits(in[i]);
        if ((u & 0x7fffffff) > 0x7f800000)
            out[i] = uint16_t((u >> 16) | 0x40); // quiet NaN
        else
            out[i] = uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
}

void bfloat16ToFloat(std::span<const uint16_t> in, float *out)
{
    for (size_t i = 0; i < in.size(); ++i)
        out[i] = fromBits(uint32_t(in[i]) << 16);
}

void roundToBfloat16(std::span<float> values)
{
    uint16_t narrow;
    for (float &v : values) {
        floatToBfloat16(std::span<const float>(&v, 1), &narrow);
        bfloat16ToFloat(std::span<const uint16_t>(&narrow, 1), &v);
    }
}

} // namespace rookery
