// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QList>
#include <QMainWindow>

#include "engine/host/engine_snapshot.h"
#include "ui/main/main_actions.h"

class QLabel;
class QTabWidget;

namespace rookery::ui {

class AssignmentCard;
class JoinCard;
class CheckpointList;
class ContributionCard;
class DeviceCard;
class EventLogView;
class PeerGraphPanel;
class StatusBanner;
class TrainingCharts;

/// The main window: status banner, the device, assignment and contribution cards, live
/// charts, and tabs for the peer graph, checkpoints and event log. It shows snapshots
/// and asks for things through its actions and signals; it never calls the engine.
///
/// Thread safety: UI thread.
class MainWindow : public QMainWindow
{
    Q_OBJECT

public:
    explicit MainWindow(QWidget *parent = nullptr);

    void showSnapshot(const host::EngineSnapshot &snapshot);
    void appendEvents(const QList<host::EngineEvent> &events);
    void appendAppEvent(host::EngineEvent::Level level, const QString &message);
    /// Marks the window as running against the simulated engine.
    void setSimulation(bool simulation);
    /// Lets the next close event close the window (after Quit has finished).
    void setAllowClose(bool allow) { m_allowClose = allow; }
    /// Shows a transient message in the status bar.
    void showMessage(const QString &text, int timeoutMs = 0);

    MainActions &actions() { return m_actions; }
    StatusBanner *banner() const { return m_banner; }
    DeviceCard *deviceCard() const { return m_device; }
    AssignmentCard *assignmentCard() const { return m_assignment; }
    JoinCard *joinCard() const { return m_join; }
    ContributionCard *contributionCard() const { return m_contribution; }
    TrainingCharts *charts() const { return m_charts; }
    PeerGraphPanel *peers() const { return m_peers; }
    CheckpointList *checkpoints() const { return m_checkpoints; }
    EventLogView *eventLog() const { return m_log; }
    QTabWidget *tabs() const { return m_tabs; }

Q_SIGNALS:
    /// The window's close button was pressed (the controller decides: tray or quit).
    void closeRequested();

protected:
    void closeEvent(QCloseEvent *event) override;
    void changeEvent(QEvent *event) override;

private:
    QWidget *makeCards();
    void updateActions(const host::EngineSnapshot &snapshot);
    void updateTitle();

    MainActions m_actions;
    StatusBanner *m_banner;
    DeviceCard *m_device;
    JoinCard *m_join;
    AssignmentCard *m_assignment;
    ContributionCard *m_contribution;
    TrainingCharts *m_charts;
    PeerGraphPanel *m_peers;
    CheckpointList *m_checkpoints;
    EventLogView *m_log;
    QTabWidget *m_tabs;
    QLabel *m_mode;
    QString m_status;
    bool m_simulation = false;
    bool m_allowClose = false;
};

} // namespace rookery::ui
