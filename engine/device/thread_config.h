// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace rookery::device {

/// How many threads the math may use: LibTorch's intra-op pool and the BLAS library's
/// own pool. Both must be set on purpose: two torch threads over a multi-threaded
/// OpenBLAS ran our MLP 4x slower than one torch thread on a 2-core machine.
/// (Applying one is compute_threads.h's job; this header stays free of LibTorch so
/// that the resource governor can plan thread counts without it.)
///
/// Thread safety: a plain value.
struct ThreadConfig
{
    int torchThreads = 1;
    int blasThreads = 1;
    bool operator==(const ThreadConfig &) const = default;
    std::string describe() const; ///< "torch 1 x blas 2"
};

/// The configuration we measured fastest for training with `cores` cores
/// (bench_trainer sweeps them): one torch thread, BLAS gets the cores.
ThreadConfig defaultThreadConfig(int cores);

} // namespace rookery::device
