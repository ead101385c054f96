// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "engine/device/capability_profile.h"

namespace rookery::store {
class ProfileCache;
}

namespace rookery::device {

/// A profile older than this is measured again.
inline constexpr std::chrono::hours kProfileMaxAge{24 * 30};

struct ProfileLookup
{
    CapabilityProfile profile;
    bool measured = false; ///< false: it came from the cache
    std::string why;       ///< "cached 3 days ago", "hardware changed", "older than 30 days", ...
};

/// The cache policy: the newest cached profile for `hardware`'s key when it parses and
/// is younger than kProfileMaxAge, unless `remeasure`; else `measure()`, stored. A
/// cached profile gets `hardware`'s fresh RAM available, free disk, allowed cores and
/// data directory, which change from minute to minute.
///
/// Thread safety: as safe as `cache` and `measure`.
ProfileLookup cachedOrMeasured(store::ProfileCache &cache, const CapabilityProfile &hardware, int64_t nowMs,
                               bool remeasure, const std::function<CapabilityProfile()> &measure);

/// The same for this machine: rookery.db in `dataDir`, readHardwareProfile(),
/// measureCapabilityProfile(), the system clock. Throws rookery::Error for a bad
/// database or data directory. With a memory cap (bytes; 0: none) a measurement keeps
/// its memory copy within an eighth of the cap (its two buffers within a quarter), so
/// that measuring does not take the process past what its owner allowed.
ProfileLookup loadCapabilityProfile(const std::filesystem::path &dataDir, bool remeasure, uint64_t memoryCapBytes = 0);

} // namespace rookery::device
