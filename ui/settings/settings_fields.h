// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>
#include <vector>

#include <QString>

#include "engine/device/governor_settings.h"

namespace rookery::ui {

/// Which page of the settings dialog a governor setting sits on.
enum class SettingsPage { Active, Idle, Rules };

/// One governor setting as the desktop app presents it. The app writes down only how a
/// setting looks (page, label, help, unit, what 0 means) and where it lives in
/// device::GovernorSettings; its key, kind and range come from the engine's row
/// (engine/device/governor_settings.h: governorSettingFields()) and its default from
/// device::volunteerGovernorSettings(), so nothing here can drift from the engine.
struct SettingsField
{
    using Kind = device::GovernorSettingField::Kind;

    const device::GovernorSettingField *setting; ///< the engine's row
    SettingsPage page;
    QString label;
    QString help;     ///< for people; the engine's help is for command lines
    QString unit;     ///< " %", " KiB/s", ... (with the leading space)
    QString zeroText; ///< what 0 means ("All cores", "Unlimited"); empty if 0 is a plain number

    // Copied from the engine's row and the volunteer defaults when the table is built.
    std::string key;
    Kind kind;
    int min = 0; ///< the engine's range, clamped to what a QSpinBox holds
    int max = 0;
    std::string defaultValue; ///< as the engine writes it ("50", "true", "")
};

/// The table: every governor setting the app offers, in display order.
const std::vector<SettingsField> &settingsFields();

/// The field with `key`, or nullptr.
const SettingsField *findSettingsField(const std::string &key);

/// The volunteer defaults (device::volunteerGovernorSettings()) as key -> value.
std::map<std::string, std::string> defaultGovernorSettings();

/// "50 %", "Unlimited", "on", "any time": a value as a person reads it.
QString describeSettingValue(const SettingsField &field, const std::string &value);

} // namespace rookery::ui
