// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main/desktop_controller.h"

#include <QAction>
#include <QCoreApplication>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>

#include "engine/common/version.h"
#include "ui/autostart/autostart.h"
#include "ui/bridge/engine_bridge.h"
#include "ui/checkpoints/checkpoint_list.h"
#include "ui/consent/consent_dialog.h"
#include "ui/join/join_dialog.h"
#include "ui/main/main_window.h"
#include "ui/main/quit_sequence.h"
#include "ui/main/status_banner.h"
#include "ui/main/status_text.h"
#include "ui/settings/settings_dialog.h"
#include "ui/tray/tray_icon.h"

namespace rookery::ui {

using Level = host::EngineEvent::Level;

DesktopController::DesktopController(std::shared_ptr<host::EngineApi> engine, QSettings &settings,
                                     DesktopOptions options, QObject *parent)
    : QObject(parent)
    , m_settings(settings)
    , m_options(std::move(options))
    , m_governorStore(settings)
    , m_consent(settings)
    , m_bridge(new EngineBridge(std::move(engine), m_options.pollMs, this))
    , m_window(std::make_unique<MainWindow>())
    , m_tray(new TrayIcon(this))
    , m_trayAvailable(m_options.trayAvailable.value_or(TrayIcon::available()))
    , m_quit(new QuitSequence(m_bridge, m_options.quitTimeoutMs, this))
{
    m_window->setSimulation(m_options.simulation);
    m_window->actions().darkTheme->setChecked(currentTheme() == Theme::Dark);
    connect(m_quit, &QuitSequence::done, this, &DesktopController::quitDone);
    connect(m_bridge, &EngineBridge::snapshotChanged, this, [this](const host::EngineSnapshot &s) {
        m_window->showSnapshot(s);
        m_tray->showSnapshot(s);
    });
    connect(m_bridge, &EngineBridge::eventsArrived, m_window.get(), &MainWindow::appendEvents);
    connectWindow();
    connectTray();
}

DesktopController::~DesktopController() = default;

ConsentDialog *DesktopController::consentDialog() const { return m_consentDialog; }
SettingsDialog *DesktopController::settingsDialog() const { return m_settingsDialog; }
JoinDialog *DesktopController::joinDialog() const { return m_joinDialog; }
QProgressDialog *DesktopController::quitProgress() const { return m_quit->progress(); }
bool DesktopController::quitting() const { return m_quit->started(); }

void DesktopController::connectWindow()
{
    MainWindow *w = m_window.get();
    MainActions &a = w->actions();
    connect(a.start, &QAction::triggered, this, &DesktopController::openJoin);
    connect(a.stop, &QAction::triggered, this, &DesktopController::stopTraining);
    connect(a.pauseResume, &QAction::triggered, this, &DesktopController::togglePause);
    connect(a.snooze15, &QAction::triggered, this, [this] { snooze(15); });
    connect(a.snooze60, &QAction::triggered, this, [this] { snooze(60); });
    connect(a.snooze180, &QAction::triggered, this, [this] { snooze(180); });
    connect(a.settings, &QAction::triggered, this, &DesktopController::openSettings);
    connect(a.consent, &QAction::triggered, this, [this] {
        if (m_consent.given())
            requestWithdrawConsent();
        else
            showConsent();
    });
    connect(a.quit, &QAction::triggered, this, &DesktopController::requestQuit);
    connect(a.darkTheme, &QAction::toggled, this, [this](bool dark) { setTheme(dark ? Theme::Dark : Theme::Light); });
    connect(a.about, &QAction::triggered, this, &DesktopController::showAbout);
    StatusBanner *banner = w->banner();
    connect(banner, &StatusBanner::consentRequested, this, &DesktopController::showConsent);
    connect(banner, &StatusBanner::startRequested, this, &DesktopController::openJoin);
    connect(banner, &StatusBanner::pauseRequested, this, &DesktopController::togglePause);
    connect(banner, &StatusBanner::resumeRequested, this, &DesktopController::togglePause);
    connect(w->checkpoints(), &CheckpointList::resumeRequested, this, &DesktopController::resumeCheckpoint);
    connect(w->checkpoints(), &CheckpointList::deleteRequested, this, &DesktopController::deleteCheckpoint);
    connect(w, &MainWindow::closeRequested, this, &DesktopController::onCloseRequested);
}

void DesktopController::connectTray()
{
    connect(m_tray, &TrayIcon::showRequested, this, &DesktopController::showWindow);
    connect(m_tray, &TrayIcon::pauseRequested, this, &DesktopController::togglePause);
    connect(m_tray, &TrayIcon::resumeRequested, this, &DesktopController::togglePause);
    connect(m_tray, &TrayIcon::snoozeRequested, this, &DesktopController::snooze);
    connect(m_tray, &TrayIcon::quitRequested, this, &DesktopController::requestQuit);
}

void DesktopController::start()
{
    // The limits bind before anything could run, consent or not. A headless node keeps
    // the limits it was started with; Settings changes them.
    if (m_options.attachedTo.isEmpty())
        m_bridge->applyGovernorSettings(m_governorStore.load(), [this](const QString &error) {
            if (!error.isEmpty())
                log(true, tr("The engine refused the saved settings (%1); its own limits apply. Open Settings to "
                             "correct them.")
                              .arg(error));
        });
    else
        log(false, tr("Attached to the headless node at %1: it trains what it was started with. Pause, resume, "
                      "snooze and Settings act on it; Quit leaves it running.")
                       .arg(m_options.attachedTo));
    if (m_options.simulation)
        log(false, tr("Running the simulation: the figures are invented, nothing trains."));
    const bool consent = m_consent.given();
    m_bridge->setConsent(consent);
    m_bridge->pollNow();
    if (m_trayAvailable)
        m_tray->show();
    if (!m_options.minimized || !consent || !m_trayAvailable)
        m_window->show();
    if (consent) {
        beginWork();
    } else {
        log(false, tr("Waiting for consent: nothing computes until you agree."));
        showConsent();
    }
}

void DesktopController::beginWork()
{
    if (!m_options.attachedTo.isEmpty())
        return; // the node works already
    if (m_options.startWith)
        startChoice(*m_options.startWith);
    else if (const auto remembered = loadJoinChoice(m_settings))
        startChoice(*remembered);
    else
        openJoin();
}

void DesktopController::showConsent()
{
    if (m_consentDialog) {
        m_consentDialog->raise();
        return;
    }
    showWindow();
    auto *d = new ConsentDialog(m_governorStore.load(), m_window.get());
    d->setAttribute(Qt::WA_DeleteOnClose);
    connect(d, &QDialog::accepted, this, &DesktopController::giveConsent);
    connect(d, &QDialog::rejected, this,
            [this] { log(false, tr("Consent not given: nothing computes. Review it from the banner or the menu.")); });
    m_consentDialog = d;
    d->open();
}

void DesktopController::giveConsent()
{
    m_consent.setGiven(true);
    m_bridge->setConsent(true);
    log(false, tr("Consent given."));
    if (m_settingsDialog)
        m_settingsDialog->setConsent(true, m_consent.givenAt());
    beginWork();
}

void DesktopController::requestWithdrawConsent()
{
    auto *box = new QMessageBox(QMessageBox::Question, tr("Withdraw consent"),
                                tr("Rookery will save a checkpoint, stop, and compute nothing until you agree "
                                   "again. Withdraw consent?"),
                                QMessageBox::Cancel,
                                m_settingsDialog ? static_cast<QWidget *>(m_settingsDialog) : m_window.get());
    QPushButton *yes = box->addButton(tr("Withdraw"), QMessageBox::AcceptRole);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, this, [this, box, yes] {
        if (box->clickedButton() == yes)
            withdrawConsent();
    });
    box->open();
}

void DesktopController::withdrawConsent()
{
    m_consent.setGiven(false);
    m_bridge->setConsent(false); // the engine checkpoints and stops
    log(false, tr("Consent withdrawn: Rookery saves a checkpoint and stops."));
    if (m_settingsDialog)
        m_settingsDialog->setConsent(false, {});
}

void DesktopController::openSettings()
{
    if (m_settingsDialog) {
        m_settingsDialog->raise();
        return;
    }
    auto values = m_governorStore.load();
    for (const auto &[key, value] : m_bridge->governorSettings()) {
        if (m_options.attachedTo.isEmpty())
            values.try_emplace(key, value); // keys the engine has and the app's table lacks
        else
            values[key] = value; // an attached node's own limits are the ones in force
    }
    auto *d = new SettingsDialog(values, m_window.get());
    d->setAttribute(Qt::WA_DeleteOnClose);
    d->setStartAtLogin(Autostart::isEnabled());
    d->setConsent(m_consent.given(), m_consent.givenAt());
    connect(d, &SettingsDialog::saveRequested, this, [this, d] {
        QString autostartError;
        if (d->startAtLogin() != Autostart::isEnabled() &&
            !Autostart::setEnabled(d->startAtLogin(), QCoreApplication::applicationFilePath(), &autostartError))
            log(true, autostartError);
        const auto wanted = d->values();
        m_bridge->applyGovernorSettings(wanted, [this, d = QPointer<SettingsDialog>(d), wanted](const QString &e) {
            if (e.isEmpty()) {
                if (m_options.attachedTo.isEmpty()) // the node's limits are not the app's
                    m_governorStore.save(wanted);
                log(false, tr("Settings saved."));
            } else {
                log(true, tr("The engine refused the settings: %1").arg(e));
            }
            if (d)
                d->applyFinished(e);
        });
    });
    connect(d, &SettingsDialog::withdrawConsentRequested, this, &DesktopController::requestWithdrawConsent);
    connect(d, &SettingsDialog::giveConsentRequested, this, &DesktopController::showConsent);
    m_settingsDialog = d;
    d->open();
}

void DesktopController::openJoin()
{
    if (!m_consent.given()) {
        showConsent();
        return;
    }
    if (m_joinDialog) {
        m_joinDialog->raise();
        return;
    }
    showWindow();
    auto *d = new JoinDialog(loadJoinChoice(m_settings).value_or(JoinChoice{}), m_window.get());
    d->setAttribute(Qt::WA_DeleteOnClose);
    connect(d, &QDialog::accepted, this, [this, d] {
        saveJoinChoice(m_settings, d->choice());
        startChoice(d->choice());
    });
    m_joinDialog = d;
    d->open();
}

void DesktopController::startChoice(const JoinChoice &choice)
{
    if (!m_consent.given()) {
        showConsent();
        return;
    }
    if (!m_bridge->snapshot().running) {
        startNow(choice);
        return;
    }
    // One job at a time: checkpoint the running one, then start the new one.
    m_bridge->stopTraining([this, choice](const QString &error) {
        if (!error.isEmpty())
            log(true, tr("Could not stop the running training: %1").arg(error));
        else
            startNow(choice);
    });
}

void DesktopController::startNow(const JoinChoice &choice)
{
    const QString what = choice.describe();
    auto done = [this, what](const QString &error) {
        if (error.isEmpty()) {
            log(false, tr("Started training with %1.").arg(what));
            return;
        }
        log(true, tr("Could not start training with %1: %2").arg(what, error));
        auto *box = new QMessageBox(QMessageBox::Warning, tr("Rookery"),
                                    tr("Could not start training with %1.").arg(what), QMessageBox::Ok, m_window.get());
        box->setInformativeText(error);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
    };
    log(false, tr("Starting training with %1…").arg(what));
    switch (choice.kind) {
    case JoinChoice::Kind::DemoSwarm:
        m_bridge->startDemoSwarm(choice.nodes, done);
        break;
    case JoinChoice::Kind::Address:
        m_bridge->joinSwarm(choice.address, done);
        break;
    case JoinChoice::Kind::Local:
        m_bridge->startLocal(done);
        break;
    }
}

void DesktopController::togglePause()
{
    const auto &s = m_bridge->snapshot();
    if (!s.running)
        return;
    if (pausedByUser(s)) {
        m_bridge->resume();
        log(false, tr("Resumed."));
    } else {
        m_bridge->pause();
        log(false, tr("Paused: training holds after the current batch."));
    }
}

void DesktopController::snooze(int minutes)
{
    m_bridge->snooze(minutes);
    log(false, tr("Snoozed for %n minute(s).", nullptr, minutes));
}

void DesktopController::stopTraining()
{
    m_window->showMessage(tr("Saving a checkpoint and stopping…"));
    m_bridge->stopTraining([this](const QString &error) {
        m_window->showMessage(error.isEmpty() ? tr("Stopped.") : tr("Stop failed: %1").arg(error), 5000);
        log(!error.isEmpty(), error.isEmpty() ? tr("Training stopped; checkpoint saved.") : error);
    });
}

void DesktopController::resumeCheckpoint(qint64 id)
{
    auto resume = [this, id] {
        m_bridge->resumeCheckpoint(id, [this](const QString &error) {
            log(!error.isEmpty(), error.isEmpty() ? tr("Resumed from the checkpoint.")
                                                  : tr("Could not resume from the checkpoint: %1").arg(error));
        });
    };
    if (!m_bridge->snapshot().running) {
        resume();
        return;
    }
    m_bridge->stopTraining([this, resume](const QString &error) {
        if (error.isEmpty())
            resume();
        else
            log(true, tr("Could not stop the running training: %1").arg(error));
    });
}

void DesktopController::deleteCheckpoint(qint64 id)
{
    m_bridge->deleteCheckpoint(id, [this](const QString &error) {
        log(!error.isEmpty(),
            error.isEmpty() ? tr("Checkpoint deleted.") : tr("Could not delete the checkpoint: %1").arg(error));
    });
}

void DesktopController::showWindow()
{
    m_window->show();
    m_window->setWindowState(m_window->windowState() & ~Qt::WindowMinimized);
    m_window->raise();
    m_window->activateWindow();
}

void DesktopController::setTheme(Theme theme)
{
    applyTheme(theme);
    saveTheme(m_settings, theme);
    m_window->actions().darkTheme->setChecked(theme == Theme::Dark);
}

void DesktopController::onCloseRequested()
{
    if (!m_trayAvailable || quitting()) {
        requestQuit();
        return;
    }
    m_window->hide();
    if (!m_toldAboutTray) {
        m_toldAboutTray = true;
        m_tray->notify(tr("Rookery keeps training"), tr("Rookery is still in the tray. Pause or quit from its menu."));
    }
}

void DesktopController::requestQuit()
{
    if (quitting())
        return;
    // Quitting detaches from a headless node; it goes on training.
    const bool training = m_bridge->snapshot().running && m_options.attachedTo.isEmpty();
    if (training)
        log(false, tr("Quitting: saving a checkpoint first…"));
    m_quit->start(training, m_window->isVisible() ? m_window.get() : nullptr);
}

void DesktopController::quitDone(const QString &error)
{
    if (!error.isEmpty())
        log(true, tr("Quitting without a final checkpoint: %1").arg(error));
    m_window->setAllowClose(true);
    Q_EMIT quitFinished();
}

void DesktopController::log(bool error, const QString &message)
{
    m_window->appendAppEvent(error ? Level::Error : Level::Info, message);
    if (error)
        m_window->showMessage(message, 8000);
}

void DesktopController::showAbout()
{
    auto *box = new QMessageBox(QMessageBox::NoIcon, tr("About Rookery"),
                                tr("<h3>Rookery %1</h3><p>Volunteer computing for training neural networks "
                                   "together.</p><p>Licensed under the GNU GPL, version 3 or later.</p>")
                                    .arg(QString::fromLatin1(kVersion)),
                                QMessageBox::Close, m_window.get());
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

} // namespace rookery::ui
