// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <optional>

#include <QObject>
#include <QPointer>

#include "engine/host/engine_api.h"
#include "ui/consent/consent_store.h"
#include "ui/join/join_choice.h"
#include "ui/settings/governor_settings_store.h"
#include "ui/theme/theme.h"

class QSettings;
class QProgressDialog;

namespace rookery::ui {

class ConsentDialog;
class EngineBridge;
class JoinDialog;
class MainWindow;
class QuitSequence;
class SettingsDialog;
class TrayIcon;

struct DesktopOptions
{
    bool minimized = false;  ///< start in the tray (autostart)
    bool simulation = false; ///< the engine is the SimulatedEngine: say so
    /// The engine drives a headless node (rookery --attach): the node keeps its own
    /// limits and work, and Quit leaves it running. Names the node for messages.
    QString attachedTo;
    std::optional<JoinChoice> startWith; ///< from the command line; else the remembered choice
    std::optional<bool> trayAvailable;   ///< tests decide; else the desktop says
    int quitTimeoutMs = 20000;           ///< how long Quit waits for the checkpoint
    int pollMs = 500;
};

/// Ties the app together: the bridge to the engine, the main window, the tray and the
/// dialogs, and the rules between them. Consent gates every start; the saved governor
/// settings go to the engine before anything else; closing hides to the tray while
/// there is one; Quit checkpoints first, asynchronously, with a timeout.
///
/// Thread safety: UI thread.
class DesktopController : public QObject
{
    Q_OBJECT

public:
    DesktopController(std::shared_ptr<host::EngineApi> engine, QSettings &settings, DesktopOptions options,
                      QObject *parent = nullptr);
    ~DesktopController() override;

    /// Sends the saved limits and the consent state, shows the window (or not, in the
    /// tray) and either asks for consent or starts the remembered work.
    void start();

    MainWindow *window() const { return m_window.get(); }
    EngineBridge *bridge() const { return m_bridge; }
    TrayIcon *tray() const { return m_tray; }
    bool trayAvailable() const { return m_trayAvailable; }
    ConsentDialog *consentDialog() const;
    SettingsDialog *settingsDialog() const;
    JoinDialog *joinDialog() const;
    QProgressDialog *quitProgress() const;
    bool quitting() const;

public Q_SLOTS:
    void showConsent();
    void giveConsent();
    /// Asks first, then withdraws.
    void requestWithdrawConsent();
    void withdrawConsent();
    void openSettings();
    void openJoin();
    void startChoice(const rookery::ui::JoinChoice &choice);
    void togglePause();
    void snooze(int minutes);
    void stopTraining();
    void resumeCheckpoint(qint64 id);
    void deleteCheckpoint(qint64 id);
    void showWindow();
    void setTheme(rookery::ui::Theme theme);
    /// Checkpoints, then emits quitFinished(); never blocks.
    void requestQuit();

Q_SIGNALS:
    /// Quit may proceed: the checkpoint is saved (or the wait timed out).
    void quitFinished();

private:
    void connectWindow();
    void connectTray();
    void beginWork();
    void startNow(const JoinChoice &choice);
    void onCloseRequested();
    void quitDone(const QString &error);
    void log(bool error, const QString &message);
    void showAbout();

    QSettings &m_settings;
    DesktopOptions m_options;
    GovernorSettingsStore m_governorStore;
    ConsentStore m_consent;
    EngineBridge *m_bridge;
    std::unique_ptr<MainWindow> m_window;
    TrayIcon *m_tray;
    bool m_trayAvailable;
    QPointer<ConsentDialog> m_consentDialog;
    QPointer<SettingsDialog> m_settingsDialog;
    QPointer<JoinDialog> m_joinDialog;
    QuitSequence *m_quit;
    bool m_toldAboutTray = false;
};

} // namespace rookery::ui
