// SPDX-License-Identifier: GPL-3.0-or-later
// What most widget tests need: a FakeEngine, settings in a temporary INI file, and a
// DesktopController over both, plus helpers to let queued work arrive.
#pragma once

#include <memory>

#include <QAbstractButton>
#include <QCoreApplication>
#include <QMessageBox>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/fakes/fake_engine.h"
#include "tests/support/test_support.h"
#include "ui/bridge/engine_bridge.h"
#include "ui/consent/consent_store.h"
#include "ui/main/desktop_controller.h"
#include "ui/main/main_window.h"

namespace rookery::test {

class UiFixture
{
public:
    UiFixture()
        : settings(std::make_unique<QSettings>(dir.filePath(QStringLiteral("rookery.ini")), QSettings::IniFormat))
    { }

    void storeConsent() { ui::ConsentStore(*settings).setGiven(true); }
    /// Remembers "the local demo swarm" as the work to resume.
    void storeDemoChoice()
    {
        settings->setValue(QStringLiteral("session/kind"), QStringLiteral("demo"));
        settings->setValue(QStringLiteral("session/nodes"), 4);
    }

    ui::DesktopController &start(ui::DesktopOptions options = {})
    {
        if (!options.trayAvailable)
            options.trayAvailable = false;
        options.pollMs = 10'000; // tests sync by hand; the timer is tested on its own
        controller = std::make_unique<ui::DesktopController>(engine, *settings, options);
        controller->start();
        sync();
        return *controller;
    }

    /// Lets posted results arrive, then copies the engine's newest snapshot.
    void sync()
    {
        for (int i = 0; i < 3; ++i)
            QCoreApplication::processEvents();
        if (controller)
            controller->bridge()->pollNow();
        QCoreApplication::processEvents();
    }

    ui::MainWindow *window() const { return controller->window(); }

    /// Replaces the engine's whole state with `s` (consent and running flags included)
    /// and syncs.
    void publish(host::EngineSnapshot s)
    {
        engine->publish(std::move(s));
        sync();
    }

    QTemporaryDir dir;
    std::unique_ptr<QSettings> settings;
    std::shared_ptr<FakeEngine> engine = std::make_shared<FakeEngine>();
    std::unique_ptr<ui::DesktopController> controller;
};

/// The first visible message box under `parent`, or nullptr.
inline QMessageBox *openMessageBox(QWidget *parent)
{
    for (QMessageBox *box : parent->findChildren<QMessageBox *>())
        if (box->isVisible())
            return box;
    return nullptr;
}

/// Clicks the button of `box` whose text (without '&') is `text`.
inline bool clickButton(QMessageBox *box, const QString &text)
{
    for (QAbstractButton *b : box->buttons())
        if (b->text().remove(QLatin1Char('&')) == text) {
            b->click();
            return true;
        }
    return false;
}

} // namespace rookery::test
