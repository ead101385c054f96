// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/cards/assignment_card.h"
#include "ui/cards/contribution_card.h"
#include "ui/cards/device_card.h"
#include "ui/cards/join_card.h"
#include "ui/charts/training_charts.h"
#include "ui/checkpoints/checkpoint_list.h"
#include "ui/log/event_log_view.h"
#include "ui/main/status_banner.h"
#include "ui/main/status_text.h"
#include "ui/peers/peer_graph_view.h"
#include "ui/theme/icons.h"

namespace rookery::ui {

MainWindow::MainWindow(QWidget *parent)
    : QMainWindow(parent)
    , m_banner(new StatusBanner(this))
    , m_device(new DeviceCard(this))
    , m_join(new JoinCard(this))
    , m_assignment(new AssignmentCard(this))
    , m_contribution(new ContributionCard(this))
    , m_charts(new TrainingCharts(this))
    , m_peers(new PeerGraphPanel(this))
    , m_checkpoints(new CheckpointList(this))
    , m_log(new EventLogView(this))
    , m_tabs(new QTabWidget(this))
    , m_mode(new QLabel(this))
{
    setWindowIcon(appIcon());
    setAccessibleName(tr("Rookery"));
    m_actions.create(this);

    m_tabs->addTab(m_peers, tr("P&eers"));
    m_tabs->addTab(m_checkpoints, tr("Chec&kpoints"));
    m_tabs->addTab(m_log, tr("Event &log"));
    m_tabs->setAccessibleName(tr("Details"));
    m_tabs->tabBar()->setAccessibleName(tr("Detail pages"));
    m_tabs->setDocumentMode(true);

    auto *right = new QVBoxLayout;
    right->setSpacing(10);
    right->addWidget(m_charts, 2);
    right->addWidget(m_tabs, 3);
    auto *body = new QHBoxLayout;
    body->setSpacing(12);
    body->addWidget(makeCards());
    body->addLayout(right, 1);

    auto *central = new QWidget(this);
    auto *layout = new QVBoxLayout(central);
    layout->setContentsMargins(12, 10, 12, 8);
    layout->setSpacing(10);
    layout->addWidget(m_banner);
    layout->addLayout(body, 1);
    setCentralWidget(central);

    m_mode->setContentsMargins(6, 0, 6, 0);
    statusBar()->addPermanentWidget(m_mode);
    statusBar()->setSizeGripEnabled(false);

    setTabOrder(m_banner->actionButton(), m_tabs->tabBar());
    resize(1280, 800);
    showSnapshot({});
}

QWidget *MainWindow::makeCards()
{
    auto *column = new QWidget(this);
    auto *layout = new QVBoxLayout(column);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(10);
    layout->addWidget(m_device);
    layout->addWidget(m_join);
    layout->addWidget(m_assignment);
    layout->addWidget(m_contribution);
    layout->addStretch(1);
    auto *scroll = new QScrollArea(this);
    scroll->setWidget(column);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setFixedWidth(360);
    scroll->setFocusPolicy(Qt::NoFocus);
    scroll->setAccessibleName(tr("This computer and its work"));
    return scroll;
}

void MainWindow::showSnapshot(const host::EngineSnapshot &s)
{
    m_banner->showSnapshot(s);
    m_device->showDevice(s.device);
    m_join->showJoin(s.join);
    m_assignment->showAssignment(s.assignment);
    m_contribution->showContribution(s.contribution);
    m_charts->showSnapshot(s, QDateTime::currentMSecsSinceEpoch());
    m_peers->view()->showPeers(s.peers, s.links);
    m_checkpoints->showCheckpoints(s.checkpoints, s.running);
    m_tabs->setTabText(1,
                       s.checkpoints.empty() ? tr("Chec&kpoints") : tr("Chec&kpoints (%1)").arg(s.checkpoints.size()));
    updateActions(s);
    m_status = statusText(s).headline;
    updateTitle();
}

void MainWindow::updateActions(const host::EngineSnapshot &s)
{
    const bool paused = pausedByUser(s);
    const bool active = s.consentGiven && s.running;
    QAction *pr = m_actions.pauseResume;
    pr->setText(paused ? tr("&Resume") : tr("&Pause"));
    pr->setToolTip(paused ? tr("Resume training (Ctrl+P)") : tr("Pause training (Ctrl+P)"));
    pr->setEnabled(active);
    const QString icon = paused ? QStringLiteral("resume") : QStringLiteral("pause");
    if (pr->objectName() != icon) {
        pr->setObjectName(icon);
        pr->setIcon(themedIcon(icon));
    }
    m_actions.snoozeMenu->setEnabled(active && !paused);
    m_actions.stop->setEnabled(active);
    m_actions.start->setEnabled(s.consentGiven);
    m_actions.consent->setText(s.consentGiven ? tr("&Withdraw consent…") : tr("Give &consent…"));
}

void MainWindow::updateTitle()
{
    const QString name = m_simulation ? tr("Rookery (simulation)") : tr("Rookery");
    setWindowTitle(m_status.isEmpty() ? name : QStringLiteral("%1 · %2").arg(name, m_status));
}

void MainWindow::setSimulation(bool simulation)
{
    m_simulation = simulation;
    m_mode->setText(simulation ? tr("Simulation: the figures are invented; nothing trains") : QString());
    updateTitle();
}

void MainWindow::appendEvents(const QList<host::EngineEvent> &events) { m_log->append(events); }

void MainWindow::appendAppEvent(host::EngineEvent::Level level, const QString &message)
{
    m_log->appendApp(level, message);
}

void MainWindow::showMessage(const QString &text, int timeoutMs) { statusBar()->showMessage(text, timeoutMs); }

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_allowClose) {
        event->accept();
        return;
    }
    event->ignore();
    Q_EMIT closeRequested();
}

void MainWindow::changeEvent(QEvent *event)
{
    QMainWindow::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        m_actions.refreshIcons();
}

} // namespace rookery::ui
