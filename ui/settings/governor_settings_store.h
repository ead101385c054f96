// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>

class QSettings;

namespace rookery::ui {

/// The governor's settings as the app keeps them between runs: the volunteer defaults
/// (device::volunteerGovernorSettings(), as settings_fields.h writes them) overlaid with what the person saved, under "governor/<key>".
///
/// Thread safety: UI thread, like the QSettings it wraps.
class GovernorSettingsStore
{
public:
    explicit GovernorSettingsStore(QSettings &settings);

    /// Defaults overlaid with every stored value, known keys or not.
    std::map<std::string, std::string> load() const;
    /// Stores every key of `values` (after the engine accepted them).
    void save(const std::map<std::string, std::string> &values);

private:
    QSettings &m_settings;
};

} // namespace rookery::ui
