// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace rookery {

/// splitmix64: a small, fast generator that gives the same numbers on every platform
/// and standard library (std::shuffle and the std distributions do not), so shuffles,
/// plans and generated populations are reproducible from their seed everywhere.
struct SplitMix64
{
    uint64_t state;

    uint64_t next()
    {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    /// Unbiased integer in [0, bound), bound > 0 (by rejection).
    uint64_t below(uint64_t bound)
    {
        const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
        uint64_t r;
        do
            r = next();
        while (r >= limit);
        return r % bound;
    }
    /// Uniform in [0, 1), with 53 random bits.
    double unit() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
};

} // namespace rookery
