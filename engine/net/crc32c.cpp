// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
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
    if (haveSse42())
        return crcHardware(bytes.data(), bytes.size(), crc);
#endif
    return crc32cPortable(bytes, crc);
}

} // namespace rookery::net
