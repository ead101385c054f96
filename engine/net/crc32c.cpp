// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace rookery::net {
namespace {

constexpr uint32_t kPoly = 0x82f63b78; // reflected Castagnoli polynomial

struct Tables
{
    std::array<std::array<uint32_t, 256>, 8> slice{};
    // Operators that append kLong / kShort zero bytes to a CRC, one table per byte of
    // the CRC: they merge the three interleaved hardware streams (Mark Adler's method).
    std::array<std::array<uint32_t, 256>, 4> longShift{};
    std::array<std::array<uint32_t, 256>, 4> shortShift{};
};

constexpr size_t kLong = 8192;
constexpr size_t kShort = 256;

uint32_t gf2Times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    for (; vec; vec >>= 1, ++mat)
        if (vec & 1)
            sum ^= *mat;
    return sum;
}

void gf2Square(uint32_t *square, const uint32_t *mat)
{
    for (int n = 0; n < 32; ++n)
        square[n] = gf2Times(mat, mat[n]);
}

// The operator that appends `len` zero bytes (len a power of two) to a CRC.
void zerosOperator(uint32_t *even, size_t len)
{
    uint32_t odd[32];
    odd[0] = kPoly;
    for (uint32_t n = 1, row = 1; n < 32; ++n, row <<= 1)
        odd[n] = row;
    gf2Square(even, odd); // 2 zero bits
    gf2Square(odd, even); // 4 zero bits
    // Each squaring doubles the count: 1 byte after the next, then 2, 4, ...
    for (;;) {
        gf2Square(even, odd);
        len >>= 1;
        if (len == 0)
            return;
        gf2Square(odd, even);
        len >>= 1;
        if (len == 0)
            break;
    }
    std::memcpy(even, odd, sizeof(odd));
}

void shiftTables(std::array<std::array<uint32_t, 256>, 4> &out, size_t len)
{
    uint32_t op[32];
    zerosOperator(op, len);
    for (uint32_t n = 0; n < 256; ++n)
        for (int b = 0; b < 4; ++b)
            out[size_t(b)][n] = gf2Times(op, n << (8 * b));
}

Tables makeTables()
{
    Tables t;
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t crc = n;
        for (int k = 0; k < 8; ++k)
            crc = (crc & 1) ? (crc >> 1) ^ kPoly : crc >> 1;
        t.slice[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; ++n)
        for (size_t k = 1; k < 8; ++k)
            t.slice[k][n] = (t.slice[k - 1][n] >> 8) ^ t.slice[0][t.slice[k - 1][n] & 0xff];
    shiftTables(t.longShift, kLong);
    shiftTables(t.shortShift, kShort);
    return t;
}

const Tables &tables()
{
    static const Tables t = makeTables();
    return t;
}

uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

#if defined(__x86_64__)
uint32_t shift(const std::array<std::array<uint32_t, 256>, 4> &z, uint32_t crc)
{
    return z[0][crc & 0xff] ^ z[1][(crc >> 8) & 0xff] ^ z[2][(crc >> 16) & 0xff] ^ z[3][crc >> 24];
}

// Three independent CRC32 instructions per iteration hide the instruction's 3-cycle
// latency; the partial CRCs are then shifted over the bytes that follow and merged.
__attribute__((target("sse4.2"))) uint64_t crcBlocks(const uint8_t *&p, size_t &len, uint64_t c0, size_t block,
                                                     const std::array<std::array<uint32_t, 256>, 4> &z)
{
    while (len >= block * 3) {
        uint64_t c1 = 0, c2 = 0;
        for (const uint8_t *end = p + block; p < end; p += 8) {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + block));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
        }
        c0 = shift(z, uint32_t(c0)) ^ c1;
        c0 = shift(z, uint32_t(c0)) ^ c2;
        p += 2 * block;
        len -= 3 * block;
    }
    return c0;
}

__attribute__((target("sse4.2"))) uint32_t crcHardware(const uint8_t *p, size_t len, uint32_t crc)
{
    const Tables &t = tables();
    uint64_t c0 = crc ^ 0xffffffffu;
    while (len && (reinterpret_cast<uintptr_t>(p) & 7)) {
        c0 = _mm_crc32_u8(uint32_t(c0), *p++);
        --len;
    }
    c0 = crcBlocks(p, len, c0, kLong, t.longShift);
    c0 = crcBlocks(p, len, c0, kShort, t.shortShift);
    for (; len >= 8; p += 8, len -= 8)
        c0 = _mm_crc32_u64(c0, load64(p));
    for (; len; --len)
        c0 = _mm_crc32_u8(uint32_t(c0), *p++);
    return uint32_t(c0) ^ 0xffffffffu;
}

// ---- Carry-less multiplication folding (AVX-512 VPCLMULQDQ) -----------------------
// The message is folded 256 bytes at a time in sixteen 128-bit lanes: a lane's value A
// (reflected: the register holds its coefficients bit-reversed) moves F bits further
// down the message as A_hi * (x^(F+64) mod P) + A_lo * (x^F mod P), which has the same
// remainder there. The last 128 bits and the tail go through the CRC32 instruction.
// Constants are computed here rather than copied: x^n mod P for the fold distances.

uint32_t xPowModP(unsigned n) // x^n mod P, normal (not reflected) form
{
    constexpr uint32_t kNormal = 0x1edc6f41; // P without its x^32 term
    uint32_t r = 1;
    for (unsigned i = 0; i < n; ++i)
        r = (r & 0x80000000u) ? (r << 1) ^ kNormal : r << 1;
    return r;
}

uint64_t reflect64(uint64_t v)
{
    uint64_t r = 0;
    for (int i = 0; i < 64; ++i)
        if (v >> i & 1)
            r |= uint64_t(1) << (63 - i);
    return r;
}

// {lo, hi} multipliers for folding by `bits`: the low register half holds the lane's
// high-degree coefficients. A carry-less product of reflected values comes out
// multiplied by x, hence the exponents one less than the fold needs.
std::array<uint64_t, 2> foldConstants(unsigned bits)
{
    return {reflect64(xPowModP(bits + 63)), reflect64(xPowModP(bits - 1))};
}

struct FoldConstants
{
    std::array<uint64_t, 2> k2048 = foldConstants(2048), k512 = foldConstants(512), k384 = foldConstants(384),
                            k256 = foldConstants(256), k128 = foldConstants(128);
};

const FoldConstants &foldConstantTable()
{
    static const FoldConstants k;
    return k;
}

#define ROOKERY_FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

ROOKERY_FOLD_TARGET __m128i k128(const std::array<uint64_t, 2> &k)
{
    return _mm_set_epi64x(int64_t(k[1]), int64_t(k[0]));
}

ROOKERY_FOLD_TARGET __m512i fold512(__m512i a, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00), _mm512_clmulepi64_epi128(a, k, 0x11), next,
                                     0x96);
}

ROOKERY_FOLD_TARGET __m128i fold128(__m128i a, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

// Requires len >= 256. Returns the raw state (not inverted) after all of `p`.
ROOKERY_FOLD_TARGET uint32_t crcFold(const uint8_t *p, size_t len, uint32_t state)
{
    const FoldConstants &k = foldConstantTable();
    // (Set lane by lane: GCC 12 warns inside its own broadcast intrinsic.)
    const __m512i k2048 =
        _mm512_set_epi64(int64_t(k.k2048[1]), int64_t(k.k2048[0]), int64_t(k.k2048[1]), int64_t(k.k2048[0]),
                         int64_t(k.k2048[1]), int64_t(k.k2048[0]), int64_t(k.k2048[1]), int64_t(k.k2048[0]));
    const __m512i k512 =
        _mm512_set_epi64(int64_t(k.k512[1]), int64_t(k.k512[0]), int64_t(k.k512[1]), int64_t(k.k512[0]),
                         int64_t(k.k512[1]), int64_t(k.k512[0]), int64_t(k.k512[1]), int64_t(k.k512[0]));
    __m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64), x2 = _mm512_loadu_si512(p + 128),
            x3 = _mm512_loadu_si512(p + 192);
    x0 = _mm512_xor_si512(x0, _mm512_castsi128_si512(_mm_cvtsi32_si128(int(state))));
    p += 256;
    len -= 256;
    for (; len >= 256; p += 256, len -= 256) {
        x0 = fold512(x0, k2048, _mm512_loadu_si512(p));
        x1 = fold512(x1, k2048, _mm512_loadu_si512(p + 64));
        x2 = fold512(x2, k2048, _mm512_loadu_si512(p + 128));
        x3 = fold512(x3, k2048, _mm512_loadu_si512(p + 192));
    }
    __m512i x = fold512(fold512(fold512(x0, k512, x1), k512, x2), k512, x3);
    for (; len >= 64; p += 64, len -= 64)
        x = fold512(x, k512, _mm512_loadu_si512(p));
    alignas(64) __m128i lanes[4];
    _mm512_store_si512(lanes, x);
    __m128i a = _mm_xor_si128(fold128(lanes[0], k128(k.k384)), fold128(lanes[1], k128(k.k256)));
    a = _mm_xor_si128(a, fold128(lanes[2], k128(k.k128)));
    a = _mm_xor_si128(a, lanes[3]);
    for (; len >= 16; p += 16, len -= 16)
        a = _mm_xor_si128(fold128(a, k128(k.k128)), _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    uint64_t c = _mm_crc32_u64(0, uint64_t(_mm_cvtsi128_si64(a)));
    c = _mm_crc32_u64(c, uint64_t(_mm_extract_epi64(a, 1)));
    for (; len >= 8; p += 8, len -= 8)
        c = _mm_crc32_u64(c, load64(p));
    for (; len; --len)
        c = _mm_crc32_u8(uint32_t(c), *p++);
    return uint32_t(c);
}

bool haveVpclmulqdq() // CPUID leaf 7, ECX bit 10 (clang cannot name it to __builtin_cpu_supports)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 10));
}

bool haveFold()
{
    // __builtin_cpu_supports("avx512f") also checks that the OS saves the ZMM registers.
    static const bool have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                             __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2") && haveVpclmulqdq();
    return have;
}

bool haveSse42()
{
    static const bool have = __builtin_cpu_supports("sse4.2");
    return have;
}
#endif

} // namespace

uint32_t crc32cPortable(std::span<const uint8_t> bytes, uint32_t crc)
{
    const auto &s = tables().slice;
    const uint8_t *p = bytes.data();
    size_t len = bytes.size();
    crc = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        const uint64_t v = load64(p) ^ crc; // little-endian hosts only (x86, arm64)
        crc = s[7][v & 0xff] ^ s[6][(v >> 8) & 0xff] ^ s[5][(v >> 16) & 0xff] ^ s[4][(v >> 24) & 0xff] ^
              s[3][(v >> 32) & 0xff] ^ s[2][(v >> 40) & 0xff] ^ s[1][(v >> 48) & 0xff] ^ s[0][v >> 56];
    }
    for (; len; --len)
        crc = (crc >> 8) ^ s[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

bool crc32cAccelerated()
{
#if defined(__x86_64__)
    return haveSse42();
#else
    return false;
#endif
}

uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc)
{
#if defined(__x86_64__)
    if (bytes.size() >= 256 && haveFold())
        return ~crcFold(bytes.data(), bytes.size(), ~crc);
    if (haveSse42())
        return crcHardware(bytes.data(), bytes.size(), crc);
#endif
    return crc32cPortable(bytes, crc);
}

} // namespace rookery::net
