// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/governor_settings.h"

#include <algorithm>
#include <charconv>

#include "engine/common/error.h"
#include "engine/device/schedule.h"

namespace rookery::device {
namespace {

constexpr int64_t kMaxKiBps = int64_t(1) << 32; // 4 TiB/s: far beyond any link

using Integer = SettingMember<int64_t>;
using Switch = SettingMember<bool>;
using Text = SettingMember<std::string>;

std::vector<GovernorSettingField> makeFields()
{
    using S = GovernorSettings;
    using L = Limits;
    return {
        {"active.max-cores", "cores to use while the user is active (0: all)", Integer(&S::whenActive, &L::maxCores), 0,
         4096},
        {"active.cpu-percent", "share of CPU time while the user is active, 1-100",
         Integer(&S::whenActive, &L::cpuPercent), 1, 100},
        {"active.upload-kibps", "upload cap in KiB/s while the user is active (0: none)",
         Integer(&S::whenActive, &L::uploadKiBps), 0, kMaxKiBps},
        {"active.download-kibps", "download cap in KiB/s while the user is active (0: none)",
         Integer(&S::whenActive, &L::downloadKiBps), 0, kMaxKiBps},
        {"idle.max-cores", "cores to use while the machine is idle (0: all)", Integer(&S::whenIdle, &L::maxCores), 0,
         4096},
        {"idle.cpu-percent", "share of CPU time while the machine is idle, 1-100",
         Integer(&S::whenIdle, &L::cpuPercent), 1, 100},
        {"idle.upload-kibps", "upload cap in KiB/s while the machine is idle (0: none)",
         Integer(&S::whenIdle, &L::uploadKiBps), 0, kMaxKiBps},
        {"idle.download-kibps", "download cap in KiB/s while the machine is idle (0: none)",
         Integer(&S::whenIdle, &L::downloadKiBps), 0, kMaxKiBps},
        {"idle-minutes", "minutes without input before the machine counts as idle", Integer(&S::idleMinutes), 1,
         24 * 60},
        {"run-only-when-idle", "hold all work while the user is active", Switch(&S::runOnlyWhenIdle)},
        {"memory-cap-mib", "resident memory cap in MiB (0: none)", Integer(&S::memoryCapMiB), 0, int64_t(1) << 30},
        {"pause-on-battery", "hold work while the machine runs on battery", Switch(&S::pauseOnBattery)},
        {"battery-resume-seconds", "seconds on AC power before work resumes after a battery spell",
         Integer(&S::batteryResumeSeconds), 0, 24 * 3600},
        {"schedule", "weekly schedule, e.g. 'mon-fri 18:00-08:00, sat-sun all day' (empty: any time)",
         Text(&S::schedule)},
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

const GovernorSettingField *findGovernorSettingField(std::string_view key)
{
    const auto &fields = governorSettingFields();
    const auto f = std::find_if(fields.begin(), fields.end(), [&](const auto &x) { return x.key == key; });
    return f == fields.end() ? nullptr : &*f;
}

const GovernorSettingField &governorSettingField(const GovernorSettingField::Member &member)
{
    const auto &fields = governorSettingFields();
    const auto f = std::find_if(fields.begin(), fields.end(), [&](const auto &x) { return x.member == member; });
    if (f == fields.end())
        throw Error("governor settings table has no row for this member");
    return *f;
}

GovernorSettings volunteerGovernorSettings()
{
    GovernorSettings s;
    s.whenActive.cpuPercent = 50;
    s.whenActive.uploadKiBps = 1024;
    s.whenActive.downloadKiBps = 4096;
    s.memoryCapMiB = 2048;
    return s;
}

void validate(const GovernorSettings &s)
{
    for (const auto &f : governorSettingFields()) {
        if (const auto *integer = std::get_if<Integer>(&f.member)) {
            const int64_t v = integer->in(s);
            if (v < f.min || v > f.max)
                throw Error(settingError(f.key, "must be between " + std::to_string(f.min) + " and " +
                                                    std::to_string(f.max) + ", not " + std::to_string(v)));
        } else if (const auto *text = std::get_if<Text>(&f.member)) {
            try {
                Schedule::parse(text->in(s));
            } catch (const Error &e) {
                throw Error(settingError(f.key, "is malformed: " + std::string(e.what())));
            }
        }
    }
}

std::map<std::string, std::string> toKeyValues(const GovernorSettings &s)
{
    std::map<std::string, std::string> out;
    for (const auto &f : governorSettingFields()) {
        std::string value;
        if (const auto *integer = std::get_if<Integer>(&f.member))
            value = std::to_string(integer->in(s));
        else if (const auto *boolean = std::get_if<Switch>(&f.member))
            value = boolean->in(s) ? "true" : "false";
        else
            value = std::get<Text>(f.member).in(s);
        out.emplace(f.key, std::move(value));
    }
    return out;
}

GovernorSettings fromKeyValues(const std::map<std::string, std::string> &values, GovernorSettings base)
{
    for (const auto &[key, value] : values) {
        const GovernorSettingField *f = findGovernorSettingField(key);
        if (!f)
            throw Error("unknown governor setting '" + key + "'");
        if (const auto *integer = std::get_if<Integer>(&f->member)) {
            int64_t v = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec != std::errc() || end != value.data() + value.size())
                throw Error(settingError(key, "must be a whole number, not '" + value + "'"));
            integer->in(base) = v;
        } else if (const auto *boolean = std::get_if<Switch>(&f->member)) {
            if (value != "true" && value != "false")
                throw Error(settingError(key, "must be true or false, not '" + value + "'"));
            boolean->in(base) = value == "true";
        } else {
            std::get<Text>(f->member).in(base) = value;
        }
    }
    validate(base);
    return base;
}

} // namespace rookery::device
