// SPDX-License-Identifier: GPL-3.0-or-later
// bench_coordinator's volunteers: the same heterogeneous population for its synthetic
// nodes and for its planner figures.
#pragma once

#include <cstdint>

#include "engine/common/splitmix64.h"

namespace rookery::bench {

using Rng = rookery::SplitMix64;

/// A heterogeneous volunteer: laptop to server.
struct Volunteer
{
    double gflops;
    uint64_t memory;
    double upload;
};

/// The next volunteer of the population drawn by `rng`; its memory is a multiple of the
/// model's `demand` (bytes one cluster needs), from 0.3x to 2x.
inline Volunteer volunteer(Rng &rng, int64_t demand)
{
    const double gflops[] = {8, 20, 45, 90, 250};
    const double memory[] = {0.3, 0.45, 0.7, 1.1, 2.0};
    const double upload[] = {5e6, 12.5e6, 50e6, 120e6};
    return {gflops[rng.next() % 5], uint64_t(double(demand) * memory[rng.next() % 5]), upload[rng.next() % 4]};
}

} // namespace rookery::bench
