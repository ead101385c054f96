// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>
#include <vector>

#include <QString>

namespace rookery::ui {

/// Which page of the settings dialog a governor setting sits on.
enum class SettingsPage { Active, Idle, Rules };

/// One governor setting as the desktop app presents it. The keys are the engine's
/// (engine/device/governor_settings.h: governorSettingFields()); the labels, units and
/// the courteous defaults chosen for volunteers are the app's.
struct SettingsField
{
    enum class Kind { Integer, Switch, Text };
    const char *key;
    Kind kind;
    SettingsPage page;
    QString label;
    QString help;
    QString unit;     ///< " %", " KiB/s", ... (with the leading space)
    QString zeroText; ///< what 0 means ("All cores", "Unlimited"); empty if 0 is a plain number
    int min = 0;
    int max = 0;
    const char *defaultValue; ///< as the engine writes it ("50", "true", "")
};

/// The table: every governor setting the app offers, in display order. The single place
/// to align with the engine when its keys change.
const std::vector<SettingsField> &settingsFields();

/// The field with `key`, or nullptr.
const SettingsField *findSettingsField(const std::string &key);

/// The volunteer defaults as key -> value.
std::map<std::string, std::string> defaultGovernorSettings();

/// "50 %", "Unlimited", "on", "any time": a value as a person reads it.
QString describeSettingValue(const SettingsField &field, const std::string &value);

} // namespace rookery::ui
