// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QDialog>

#include "ui/join/join_choice.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace rookery::ui {

/// Start or join: the local demo swarm (with how many peers), a swarm by address, or
/// this computer alone. Start stays disabled while the address is unusable.
///
/// Thread safety: UI thread.
class JoinDialog : public QDialog
{
    Q_OBJECT

public:
    explicit JoinDialog(const JoinChoice &initial, QWidget *parent = nullptr);

    JoinChoice choice() const;

    QRadioButton *demoButton() const { return m_demo; }
    QRadioButton *addressButton() const { return m_join; }
    QRadioButton *localButton() const { return m_local; }
    QLineEdit *addressEdit() const { return m_address; }
    QPushButton *startButton() const { return m_start; }

private:
    void update();

    QRadioButton *m_demo;
    QRadioButton *m_join;
    QRadioButton *m_local;
    QSpinBox *m_nodes;
    QLineEdit *m_address;
    QLabel *m_problem;
    QPushButton *m_start;
};

} // namespace rookery::ui
