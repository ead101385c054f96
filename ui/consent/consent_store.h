// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QDateTime>

class QSettings;

namespace rookery::ui {

/// Whether the person consented, to which version of the consent text, and when. A new
/// text (kConsentVersion raised) asks again.
///
/// Thread safety: UI thread.
class ConsentStore
{
public:
    /// Raise when the consent text changes in substance.
    static constexpr int kConsentVersion = 1;

    explicit ConsentStore(QSettings &settings);

    bool given() const;
    QDateTime givenAt() const;
    void setGiven(bool given);

private:
    QSettings &m_settings;
};

} // namespace rookery::ui
