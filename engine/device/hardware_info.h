// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace rookery::device {

/// What the kernel says about the CPU and memory: cheap to read, no measuring.
struct HardwareInfo
{
    std::string cpuModel;
    int physicalCores = 0;
    int logicalCores = 0;
    uint64_t ramTotalBytes = 0;
    uint64_t ramAvailableBytes = 0;
};

/// From /proc/cpuinfo and /proc/meminfo under `procRoot` (a parameter for tests).
/// Physical cores are the distinct (physical id, core id) pairs; without those fields
/// (some ARM kernels) they count as the logical ones.
HardwareInfo readHardwareInfo(const std::filesystem::path &procRoot = "/proc");

/// The parsers, for tests.
void parseCpuInfo(std::string_view text, HardwareInfo &info);
void parseMemInfo(std::string_view text, HardwareInfo &info);

} // namespace rookery::device
