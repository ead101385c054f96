// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFrame>

#include "engine/host/engine_snapshot.h"

class QLabel;
class QPushButton;

namespace rookery::ui {

/// The strip across the top of the window: a dot in the state's colour, what Rookery is
/// doing and why, training progress, the engine's last error, and the one button that
/// matters now (give consent, start, or pause/resume).
///
/// Thread safety: UI thread.
class StatusBanner : public QFrame
{
    Q_OBJECT

public:
    explicit StatusBanner(QWidget *parent = nullptr);
    void showSnapshot(const host::EngineSnapshot &snapshot);

    QLabel *headlineLabel() const { return m_headline; }
    QLabel *detailLabel() const { return m_detail; }
    QLabel *progressLabel() const { return m_progress; }
    QLabel *errorLabel() const { return m_error; }
    QPushButton *actionButton() const { return m_action; }

Q_SIGNALS:
    void consentRequested();
    void startRequested();
    void pauseRequested();
    void resumeRequested();

protected:
    void changeEvent(QEvent *event) override;

private:
    enum class Action { Consent, Start, Pause, Resume };
    void setAction(Action action);

    QLabel *m_dot;
    QLabel *m_headline;
    QLabel *m_detail;
    QLabel *m_progress;
    QLabel *m_error;
    QPushButton *m_action;
    void paintDot();

    Action m_current = Action::Consent;
    bool m_haveAction = false;
    std::string m_state;
};

} // namespace rookery::ui
