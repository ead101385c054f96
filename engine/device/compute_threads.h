// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace rookery::device {

/// How many threads the math may use: LibTorch's intra-op pool and the BLAS library's
/// own pool. Both must be set on purpose: two torch threads over a multi-threaded
/// OpenBLAS ran our MLP 4x slower than one torch thread on a 2-core machine.
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

/// Applies `config`. The torch part is per thread under OpenMP, so call this on every
/// thread that runs math, before it does; the BLAS part is process-wide.
///
/// Thread safety: may be called from any thread.
void applyThreadConfig(ThreadConfig config);

/// The BLAS library's name and build, e.g. "OpenBLAS 0.3.21 ... SkylakeX", or
/// "unknown BLAS" when it does not say.
std::string blasDescription();

} // namespace rookery::device
