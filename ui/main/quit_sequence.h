// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>
#include <QPointer>
#include <QTimer>

class QProgressDialog;
class QWidget;

namespace rookery::ui {

class EngineBridge;

/// Quit, checkpoint first: asks the engine to stop training, shows a progress dialog,
/// and reports done() when the engine confirms or the timeout passes, whichever comes
/// first. It never blocks the UI thread; asking again while it runs changes nothing.
///
/// Thread safety: UI thread.
class QuitSequence : public QObject
{
    Q_OBJECT

public:
    QuitSequence(EngineBridge *bridge, int timeoutMs, QObject *parent = nullptr);

    /// Starts once. `training`: whether a job runs (if not, done() comes at once);
    /// `dialogParent`: the window to centre the progress dialog on, or nullptr.
    void start(bool training, QWidget *dialogParent);
    bool started() const { return m_started; }
    QProgressDialog *progress() const;

Q_SIGNALS:
    /// `error` is empty when the checkpoint was confirmed (or nothing ran).
    void done(const QString &error);

private:
    void finish(const QString &error);

    EngineBridge *m_bridge;
    QTimer m_timeout;
    QPointer<QProgressDialog> m_progress;
    bool m_started = false;
    bool m_done = false;
};

} // namespace rookery::ui
