// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>

#include "engine/host/engine_snapshot.h"

class QAction;
class QMenu;
class QSystemTrayIcon;

namespace rookery::ui {

/// The system tray icon: its colour and tooltip say what Rookery is doing; its menu has
/// the status, Show/Hide, Pause/Resume, Snooze and Quit. It only asks (signals); the
/// controller acts.
///
/// Thread safety: UI thread.
class TrayIcon : public QObject
{
    Q_OBJECT

public:
    explicit TrayIcon(QObject *parent = nullptr);
    ~TrayIcon() override;

    /// Whether the desktop has a tray; without one, closing the window quits.
    static bool available();
    void show();
    void showSnapshot(const host::EngineSnapshot &snapshot);
    /// A one-line notice from the tray (e.g. "Rookery keeps training here").
    void notify(const QString &title, const QString &text);

    QMenu *menu() const { return m_menu; }
    QAction *statusAction() const { return m_status; }
    QAction *showAction() const { return m_show; }
    QAction *pauseAction() const { return m_pause; }
    QAction *snoozeAction() const { return m_snooze; }
    QAction *quitAction() const { return m_quit; }
    QString toolTip() const;

Q_SIGNALS:
    void showRequested();
    void pauseRequested();
    void resumeRequested();
    void snoozeRequested(int minutes);
    void quitRequested();

private:
    QSystemTrayIcon *m_icon;
    QMenu *m_menu;
    QAction *m_status;
    QAction *m_show;
    QAction *m_pause;
    QAction *m_snooze;
    QAction *m_quit;
    bool m_paused = false;
    std::string m_state;
};

} // namespace rookery::ui
