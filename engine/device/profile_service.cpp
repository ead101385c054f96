// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/profile_service.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/paths.h"
#include "engine/common/wall_clock.h"
#include "engine/device/profile_probe.h"
#include "engine/store/profile_cache.h"

namespace rookery::device {
namespace {

std::string age(int64_t ms)
{
    const int64_t hours = ms / 3'600'000;
    if (hours < 1)
        return "less than an hour";
    if (hours < 48)
        return std::to_string(hours) + (hours == 1 ? " hour" : " hours");
    return std::to_string(hours / 24) + " days";
}

} // namespace

ProfileLookup cachedOrMeasured(store::ProfileCache &cache, const CapabilityProfile &hardware, int64_t nowMs,
                               bool remeasure, const std::function<CapabilityProfile()> &measure)
{
    const std::string key = hardwareKey(hardware);
    ProfileLookup out;
    const auto stored = remeasure ? std::nullopt : cache.newest(key);
    const int64_t maxAgeMs = std::chrono::duration_cast<std::chrono::milliseconds>(kProfileMaxAge).count();
    if (remeasure) {
        out.why = "measured again on request";
    } else if (!stored) {
        out.why = cache.count() > 0 ? "hardware changed since the last measurement" : "no profile measured yet";
    } else if (nowMs - stored->measuredAtMs > maxAgeMs) {
        out.why = "the cached profile is " + age(nowMs - stored->measuredAtMs) + " old";
    } else {
        try {
            out.profile = capabilityProfileFromJson(stored->json);
            out.profile.allowedCores = hardware.allowedCores;
            out.profile.ramAvailableBytes = hardware.ramAvailableBytes;
            out.profile.diskFreeBytes = hardware.diskFreeBytes;
            out.profile.dataDir = hardware.dataDir;
            out.why = "measured " + age(nowMs - stored->measuredAtMs) + " ago";
            return out;
        } catch (const Error &e) {
            log::warning("device", std::string("measuring again: ") + e.what());
            out.why = "the cached profile was unreadable";
        }
    }
    out.profile = measure();
    out.measured = true;
    cache.save({hardwareKey(out.profile), out.profile.measuredAtMs, toJson(out.profile)});
    return out;
}

ProfileLookup loadCapabilityProfile(const std::filesystem::path &dataDir, bool remeasure, uint64_t memoryCapBytes)
{
    ensurePrivateDirectory(dataDir);
    store::ProfileCache cache(dataDir / "rookery.db");
    const CapabilityProfile hardware = readHardwareProfile(dataDir);
    ProfileOptions options;
    if (memoryCapBytes > 0) // still far larger than the caches: a cap of 480 MiB copies 60 MiB
        options.copyBytes = std::max<uint64_t>(uint64_t(1) << 20, std::min(options.copyBytes, memoryCapBytes / 8));
    return cachedOrMeasured(cache, hardware, nowMs(), remeasure,
                            [&] { return measureCapabilityProfile(dataDir, options); });
}

} // namespace rookery::device
