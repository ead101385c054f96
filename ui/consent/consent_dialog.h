// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>

#include <QDialog>

class QPushButton;

namespace rookery::ui {

/// The first-run consent screen. accept() = "I agree", reject() = "Not now"; the caller
/// records the answer and tells the engine.
///
/// Thread safety: UI thread.
class ConsentDialog : public QDialog
{
    Q_OBJECT

public:
    ConsentDialog(const std::map<std::string, std::string> &limits, QWidget *parent = nullptr);

    QPushButton *agreeButton() const { return m_agree; }
    QPushButton *declineButton() const { return m_decline; }

private:
    QPushButton *m_agree;
    QPushButton *m_decline;
};

} // namespace rookery::ui
