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
/// initialisers; governorSettingFields() maps each field to its key, kind, range and
/// help text, so that a key and its default are written down once (Transmission's
/// session-settings.h). The defaults take everything; volunteerGovernorSettings() are
/// the courteous ones the desktop app starts from.
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

/// Where one setting lives in GovernorSettings: a member of its own
/// (`&GovernorSettings::idleMinutes`) or a member of one of its Limits
/// (`&GovernorSettings::whenActive, &Limits::cpuPercent`). It compares equal to itself,
/// so another table (the desktop app's labels) names a setting by where it lives rather
/// than by repeating its key.
template <typename T> struct SettingMember
{
    constexpr SettingMember(T GovernorSettings::*m)
        : member(m)
    { }
    constexpr SettingMember(Limits GovernorSettings::*situation, T Limits::*m)
        : limits(situation)
        , limitsMember(m)
    { }

    T &in(GovernorSettings &s) const { return limits ? s.*limits.*limitsMember : s.*member; }
    const T &in(const GovernorSettings &s) const { return limits ? s.*limits.*limitsMember : s.*member; }
    bool operator==(const SettingMember &) const = default;

    T GovernorSettings::*member = nullptr;
    Limits GovernorSettings::*limits = nullptr; ///< set for the members of whenActive and whenIdle
    T Limits::*limitsMember = nullptr;
};

/// One row of the settings table.
struct GovernorSettingField
{
    enum class Kind { Integer, Switch, Text }; ///< in the order of Member's alternatives
    using Member = std::variant<SettingMember<int64_t>, SettingMember<bool>, SettingMember<std::string>>;

    std::string_view key; ///< "active.cpu-percent"; a string literal
    std::string_view help;
    Member member;
    int64_t min = 0; ///< integers only
    int64_t max = 0;

    Kind kind() const { return Kind(member.index()); }
};

/// The table: every setting with its key, kind, help and range.
const std::vector<GovernorSettingField> &governorSettingFields();
/// The row with `key`, or nullptr.
const GovernorSettingField *findGovernorSettingField(std::string_view key);
/// The row for the setting that lives at `member`. Throws rookery::Error if the table has
/// none (a programming error: every member of GovernorSettings has a row).
const GovernorSettingField &governorSettingField(const GovernorSettingField::Member &member);

/// The courteous settings a volunteer's machine starts with: half the CPU time and modest
/// bandwidth while someone works at it, all of it once it is idle, and a memory cap. The
/// struct's own defaults take everything; a volunteer should not have to discover that.
GovernorSettings volunteerGovernorSettings();

/// Checks every field against its range and parses the schedule. Throws rookery::Error
/// that names the setting's key and what is wrong with its value.
void validate(const GovernorSettings &settings);

/// The settings as key -> text ("true"/"false" for switches), for files and QSettings.
std::map<std::string, std::string> toKeyValues(const GovernorSettings &settings);
/// Applies `values` over `base` and validates. Throws rookery::Error for an unknown key
/// or a value that does not parse or is out of range.
GovernorSettings fromKeyValues(const std::map<std::string, std::string> &values, GovernorSettings base = {});

} // namespace rookery::device
