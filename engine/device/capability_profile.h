// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rookery::device {

/// A CUDA device as LibTorch sees it.
struct GpuInfo
{
    std::string name;
    uint64_t memoryBytes = 0;
    double gflops = 0; ///< measured fp32 matrix multiply
    bool operator==(const GpuInfo &) const = default;
};

/// What this machine can do, measured on it: what the coordinator clusters nodes by.
///
/// Thread safety: a plain value.
struct CapabilityProfile
{
    std::string cpuModel;
    int physicalCores = 0;
    int logicalCores = 0;
    int allowedCores = 0; ///< this process's affinity mask
    uint64_t ramTotalBytes = 0;
    uint64_t ramAvailableBytes = 0;
    double gflopsOneThread = 0;               ///< fp32 matrix multiply through LibTorch, one thread
    double gflopsAllThreads = 0;              ///< the same over all allowed cores
    double memoryBandwidthBytesPerSecond = 0; ///< a large copy: bytes read + bytes written per second
    std::string dataDir;
    uint64_t diskFreeBytes = 0; ///< free to this user in dataDir
    std::vector<GpuInfo> gpus;
    std::string blas;          ///< the BLAS library LibTorch calls
    int64_t measuredAtMs = 0;  ///< Unix time
    double measureSeconds = 0; ///< how long measuring took
    bool operator==(const CapabilityProfile &) const = default;
};

/// What identifies the hardware: CPU model, core counts, RAM rounded to GiB, GPU names.
/// A cached profile whose key differs from the machine's is measured again.
std::string hardwareKey(const CapabilityProfile &profile);

/// JSON text with stable field order; the inverse throws rookery::Error on malformed
/// input (a damaged cache entry is measured again rather than trusted).
std::string toJson(const CapabilityProfile &profile);
CapabilityProfile capabilityProfileFromJson(std::string_view json);

/// Several lines for people: "CPU  Intel(R) Xeon(R) ... (2 cores, 2 threads)", ...
std::string describe(const CapabilityProfile &profile);

} // namespace rookery::device
