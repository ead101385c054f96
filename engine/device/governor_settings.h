// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rookery::device {

/// Limits that apply in one situation (user active, or machine idle).
struct Limits
{
    int64_t maxCores = 0;      ///< 0 = all the cores this process may use
    int64_t cpuPercent = 100;  ///< share of CPU time over the allowed cores, 1..100
    int64_t uploadKiBps = 0;   ///< KiB/s; 0 = unlimited
    int64_t downloadKiBps = 0; ///< KiB/s; 0 = unlimited
    bool operator==(const Limits &) const = default;
};

/// Everything the resource governor obeys. Defaults live here, in the member
/// initialisers; governorSettingFields() maps each field to its key, range and help
/// text, so that a key and its default are written down once (Transmission's
/// session-settings.h). The defaults take everything; the desktop app chooses
/// courteous ones for volunteers.
///
/// Thread safety: a plain value.
struct GovernorSettings
{
    Limits whenActive;                 ///< while the user is active (or unknown)
    Limits whenIdle;                   ///< after idleMinutes without input
    int64_t idleMinutes = 5;           ///< minutes without input before the user counts as idle
    bool runOnlyWhenIdle = false;      ///< hold all work while the user is active
    int64_t memoryCapMiB = 0;          ///< resident memory cap; 0 = none
    bool pauseOnBattery = true;        ///< hold work while running on battery
    int64_t batteryResumeSeconds = 60; ///< AC must be back this long before work resumes
    std::string schedule;              ///< weekly schedule (schedule.h); empty = any time
    bool operator==(const GovernorSettings &) const = default;
};

/// One row of the settings table.
struct GovernorSettingField
{
    std::string_view key; ///< "active.cpu-percent"
    std::string_view help;
    std::variant<int64_t &(*)(GovernorSettings &), bool &(*)(GovernorSettings &), std::string &(*)(GovernorSettings &)>
        field;
    int64_t min = 0; ///< integers only
    int64_t max = 0;
};

/// The table: every setting with its key, help and range.
const std::vector<GovernorSettingField> &governorSettingFields();

/// Checks every field against its range and parses the schedule. Throws rookery::Error
/// that names the setting's key and what is wrong with its value.
void validate(const GovernorSettings &settings);

/// The settings as key -> text ("true"/"false" for switches), for files and QSettings.
std::map<std::string, std::string> toKeyValues(const GovernorSettings &settings);
/// Applies `values` over `base` and validates. Throws rookery::Error for an unknown key
/// or a value that does not parse or is out of range.
GovernorSettings fromKeyValues(const std::map<std::string, std::string> &values, GovernorSettings base = {});

} // namespace rookery::device
