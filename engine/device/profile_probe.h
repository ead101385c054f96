// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>

#include "engine/device/capability_profile.h"

namespace rookery::device {

/// How long and how big the measurements are. The defaults take about 2-3 s on a
/// 2-core machine (well under the 10 s budget); tests use quick().
struct ProfileOptions
{
    std::chrono::milliseconds perMeasurement{400}; ///< each GFLOP/s and bandwidth figure
    int64_t matrixSize = 1024;                     ///< n of the n x n fp32 matrix multiply
    uint64_t copyBytes = uint64_t(256) << 20;      ///< size of the copy for memory bandwidth
    static ProfileOptions quick() { return {std::chrono::milliseconds(50), 256, uint64_t(16) << 20}; }
};

/// The cheap part of a profile, no measuring: CPU model and cores, RAM, free disk in
/// `dataDir`, the CUDA devices LibTorch sees (names and memory). Enough for hardwareKey().
CapabilityProfile readHardwareProfile(const std::filesystem::path &dataDir);

/// Measures the whole profile: fp32 matrix-multiply GFLOP/s through LibTorch on one
/// thread and on all allowed cores (and on each CUDA device), memory bandwidth with a
/// large copy. Restores the calling thread's thread configuration afterwards.
///
/// Thread safety: call from one thread at a time; it changes the process-wide BLAS
/// thread count while it runs, so do not measure while training.
CapabilityProfile measureCapabilityProfile(const std::filesystem::path &dataDir, const ProfileOptions &options = {});

} // namespace rookery::device
