// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/consent/consent_store.h"

#include <QSettings>

namespace rookery::ui {
namespace {
const QString kGiven = QStringLiteral("consent/given");
const QString kVersion = QStringLiteral("consent/version");
const QString kAt = QStringLiteral("consent/at");
} // namespace

ConsentStore::ConsentStore(QSettings &settings)
    : m_settings(settings)
{ }

bool ConsentStore::given() const
{
    return m_settings.value(kGiven, false).toBool() && m_settings.value(kVersion, 0).toInt() >= kConsentVersion;
}

QDateTime ConsentStore::givenAt() const { return m_settings.value(kAt).toDateTime(); }

void ConsentStore::setGiven(bool given)
{
    m_settings.setValue(kGiven, given);
    m_settings.setValue(kVersion, kConsentVersion);
    if (given)
        m_settings.setValue(kAt, QDateTime::currentDateTimeUtc());
    else
        m_settings.remove(kAt);
    m_settings.sync();
}

} // namespace rookery::ui
