// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/settings/governor_settings_store.h"

#include <QSettings>

#include "ui/settings/settings_fields.h"

namespace rookery::ui {
namespace {
const QString kGroup = QStringLiteral("governor");
}

GovernorSettingsStore::GovernorSettingsStore(QSettings &settings)
    : m_settings(settings)
{ }

std::map<std::string, std::string> GovernorSettingsStore::load() const
{
    auto values = defaultGovernorSettings();
    m_settings.beginGroup(kGroup);
    for (const QString &key : m_settings.childKeys())
        values[key.toStdString()] = m_settings.value(key).toString().toStdString();
    m_settings.endGroup();
    return values;
}

void GovernorSettingsStore::save(const std::map<std::string, std::string> &values)
{
    m_settings.beginGroup(kGroup);
    for (const auto &[key, value] : values)
        m_settings.setValue(QString::fromStdString(key), QString::fromStdString(value));
    m_settings.endGroup();
    m_settings.sync();
}

} // namespace rookery::ui
