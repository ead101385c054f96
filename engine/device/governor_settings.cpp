// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/governor_settings.h"

#include <algorithm>
#include <charconv>

#include "engine/common/error.h"
#include "engine/device/schedule.h"

namespace rookery::device {
namespace {

constexpr int64_t kMaxKiBps = int64_t(1) << 32; // 4 TiB/s: far beyond any link

template <typename T> using Getter = T &(*)(GovernorSettings &);

GovernorSettingField integer(std::string_view key, std::string_view help, Getter<int64_t> get, int64_t min, int64_t max)
{
    return {key, help, get, min, max};
}

GovernorSettingField boolean(std::string_view key, std::string_view help, Getter<bool> get)
{
    return {key, help, get, 0, 0};
}

GovernorSettingField text(std::string_view key, std::string_view help, Getter<std::string> get)
{
    return {key, help, get, 0, 0};
}

std::vector<GovernorSettingField> makeFields()
{
    using S = GovernorSettings;
    return {
        integer(
            "active.max-cores", "cores to use while the user is active (0: all)",
            [](S &s) -> int64_t & { return s.whenActive.maxCores; }, 0, 4096),
        integer(
            "active.cpu-percent", "share of CPU time while the user is active, 1-100",
            [](S &s) -> int64_t & { return s.whenActive.cpuPercent; }, 1, 100),
        integer(
            "active.upload-kibps", "upload cap in KiB/s while the user is active (0: none)",
            [](S &s) -> int64_t & { return s.whenActive.uploadKiBps; }, 0, kMaxKiBps),
        integer(
            "active.download-kibps", "download cap in KiB/s while the user is active (0: none)",
            [](S &s) -> int64_t & { return s.whenActive.downloadKiBps; }, 0, kMaxKiBps),
        integer(
            "idle.max-cores", "cores to use while the machine is idle (0: all)",
            [](S &s) -> int64_t & { return s.whenIdle.maxCores; }, 0, 4096),
        integer(
            "idle.cpu-percent", "share of CPU time while the machine is idle, 1-100",
            [](S &s) -> int64_t & { return s.whenIdle.cpuPercent; }, 1, 100),
        integer(
            "idle.upload-kibps", "upload cap in KiB/s while the machine is idle (0: none)",
            [](S &s) -> int64_t & { return s.whenIdle.uploadKiBps; }, 0, kMaxKiBps),
        integer(
            "idle.download-kibps", "download cap in KiB/s while the machine is idle (0: none)",
            [](S &s) -> int64_t & { return s.whenIdle.downloadKiBps; }, 0, kMaxKiBps),
        integer(
            "idle-minutes", "minutes without input before the machine counts as idle",
            [](S &s) -> int64_t & { return s.idleMinutes; }, 1, 24 * 60),
        boolean("run-only-when-idle", "hold all work while the user is active",
                [](S &s) -> bool & { return s.runOnlyWhenIdle; }),
        integer(
            "memory-cap-mib", "resident memory cap in MiB (0: none)", [](S &s) -> int64_t & { return s.memoryCapMiB; },
            0, int64_t(1) << 30),
        boolean("pause-on-battery", "hold work while the machine runs on battery",
                [](S &s) -> bool & { return s.pauseOnBattery; }),
        integer(
            "battery-resume-seconds", "seconds on AC power before work resumes after a battery spell",
            [](S &s) -> int64_t & { return s.batteryResumeSeconds; }, 0, 24 * 3600),
        text("schedule", "weekly schedule, e.g. 'mon-fri 18:00-08:00, sat-sun all day' (empty: any time)",
             [](S &s) -> std::string & { return s.schedule; }),
    };
}

std::string settingError(std::string_view key, const std::string &what)
{
    return "governor setting '" + std::string(key) + "' " + what;
}

} // namespace

const std::vector<GovernorSettingField> &governorSettingFields()
{
    static const std::vector<GovernorSettingField> fields = makeFields();
    return fields;
}

void validate(const GovernorSettings &settings)
{
    GovernorSettings s = settings; // the table's accessors take a mutable struct
    for (const auto &f : governorSettingFields()) {
        if (const auto *get = std::get_if<Getter<int64_t>>(&f.field)) {
            const int64_t v = (*get)(s);
            if (v < f.min || v > f.max)
                throw Error(settingError(f.key, "must be between " + std::to_string(f.min) + " and " +
                                                    std::to_string(f.max) + ", not " + std::to_string(v)));
        } else if (const auto *getText = std::get_if<Getter<std::string>>(&f.field)) {
            try {
                Schedule::parse((*getText)(s));
            } catch (const Error &e) {
                throw Error(settingError(f.key, "is malformed: " + std::string(e.what())));
            }
        }
    }
}

std::map<std::string, std::string> toKeyValues(const GovernorSettings &settings)
{
    GovernorSettings s = settings;
    std::map<std::string, std::string> out;
    for (const auto &f : governorSettingFields()) {
        std::string value;
        if (const auto *get = std::get_if<Getter<int64_t>>(&f.field))
            value = std::to_string((*get)(s));
        else if (const auto *getBool = std::get_if<Getter<bool>>(&f.field))
            value = (*getBool)(s) ? "true" : "false";
        else
            value = std::get<Getter<std::string>>(f.field)(s);
        out.emplace(f.key, std::move(value));
    }
    return out;
}

GovernorSettings fromKeyValues(const std::map<std::string, std::string> &values, GovernorSettings base)
{
    const auto &fields = governorSettingFields();
    for (const auto &[key, value] : values) {
        const auto f = std::find_if(fields.begin(), fields.end(), [&](const auto &x) { return x.key == key; });
        if (f == fields.end())
            throw Error("unknown governor setting '" + key + "'");
        if (const auto *get = std::get_if<Getter<int64_t>>(&f->field)) {
            int64_t v = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec != std::errc() || end != value.data() + value.size())
                throw Error(settingError(key, "must be a whole number, not '" + value + "'"));
            (*get)(base) = v;
        } else if (const auto *getBool = std::get_if<Getter<bool>>(&f->field)) {
            if (value != "true" && value != "false")
                throw Error(settingError(key, "must be true or false, not '" + value + "'"));
            (*getBool)(base) = value == "true";
        } else {
            std::get<Getter<std::string>>(f->field)(base) = value;
        }
    }
    validate(base);
    return base;
}

} // namespace rookery::device
