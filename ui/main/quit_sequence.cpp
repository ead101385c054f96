// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main/quit_sequence.h"

#include <QProgressDialog>

#include "ui/bridge/engine_bridge.h"

namespace rookery::ui {

QuitSequence::QuitSequence(EngineBridge *bridge, int timeoutMs, QObject *parent)
    : QObject(parent)
    , m_bridge(bridge)
{
    m_timeout.setSingleShot(true);
    m_timeout.setInterval(timeoutMs);
    connect(&m_timeout, &QTimer::timeout, this,
            [this] { finish(tr("the engine did not confirm the checkpoint in time")); });
}

QProgressDialog *QuitSequence::progress() const { return m_progress; }

void QuitSequence::start(bool training, QWidget *dialogParent)
{
    if (m_started)
        return;
    m_started = true;
    if (!training) {
        finish({});
        return;
    }
    auto *progress = new QProgressDialog(tr("Saving a checkpoint before quitting…"), QString(), 0, 0, dialogParent);
    progress->setWindowTitle(tr("Rookery"));
    progress->setAccessibleName(tr("Saving a checkpoint before quitting"));
    progress->setCancelButton(nullptr);
    progress->setMinimumDuration(0);
    progress->setAttribute(Qt::WA_DeleteOnClose);
    progress->show();
    m_progress = progress;
    m_timeout.start();
    m_bridge->stopTraining([this](const QString &error) { finish(error); });
}

void QuitSequence::finish(const QString &error)
{
    if (m_done)
        return; // the engine answered after the timeout, or the other way round
    m_done = true;
    m_timeout.stop();
    if (m_progress) {
        m_progress->close(); // deletes itself later (WA_DeleteOnClose)
        m_progress.clear();
    }
    Q_EMIT done(error);
}

} // namespace rookery::ui
