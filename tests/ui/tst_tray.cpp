// SPDX-License-Identifier: GPL-3.0-or-later
// The tray menu: status line, Show, Pause/Resume, Snooze and Quit act on the engine and
// follow its state.
#include <QAction>
#include <QMenu>
#include <QSignalSpy>
#include <QtTest>

#include "tests/ui/ui_fixture.h"
#include "ui/tray/tray_icon.h"

using namespace rookery;
using namespace std::chrono_literals;

class TestTray : public QObject
{
    Q_OBJECT

    test::UiFixture *m_f = nullptr;

private Q_SLOTS:
    void init()
    {
        m_f = new test::UiFixture;
        m_f->storeConsent();
        m_f->storeDemoChoice();
        ui::DesktopOptions o;
        o.trayAvailable = true;
        m_f->start(o);
    }
    void cleanup() { delete m_f; }

    void menuHasEverythingInOrder()
    {
        ui::TrayIcon *tray = m_f->controller->tray();
        QStringList texts;
        for (QAction *a : tray->menu()->actions())
            if (!a->isSeparator())
                texts << a->text();
        QCOMPARE(texts,
                 (QStringList{QStringLiteral("Training"), QStringLiteral("&Show Rookery"), QStringLiteral("&Pause"),
                              QStringLiteral("S&nooze for an hour"), QStringLiteral("&Quit")}));
        QVERIFY(!tray->statusAction()->isEnabled()); // a label, not a command
        QVERIFY(tray->toolTip().startsWith(QStringLiteral("Rookery: Training")));
    }

    void pauseAndResumeFromTheTray()
    {
        ui::TrayIcon *tray = m_f->controller->tray();
        tray->pauseAction()->trigger();
        QCOMPARE(m_f->engine->commands().back(), std::string("pause"));
        m_f->sync();
        QCOMPARE(tray->pauseAction()->text(), QStringLiteral("&Resume"));
        QCOMPARE(tray->statusAction()->text(), QStringLiteral("Paused"));
        QVERIFY(!tray->snoozeAction()->isEnabled());
        QCOMPARE(m_f->window()->actions().pauseResume->text(), QStringLiteral("&Resume")); // the window agrees
        tray->pauseAction()->trigger();
        QCOMPARE(m_f->engine->commands().back(), std::string("resume"));
        m_f->sync();
        QCOMPARE(tray->pauseAction()->text(), QStringLiteral("&Pause"));
    }

    void snoozeFromTheTray()
    {
        m_f->controller->tray()->snoozeAction()->trigger();
        QCOMPARE(m_f->engine->commands().back(), std::string("snooze:60"));
    }

    void showBringsTheWindowBack()
    {
        m_f->window()->close(); // to the tray
        QVERIFY(!m_f->window()->isVisible());
        m_f->controller->tray()->showAction()->trigger();
        QVERIFY(m_f->window()->isVisible());
    }

    void quitFromTheTrayCheckpointsFirst()
    {
        m_f->window()->close();
        m_f->engine->autoComplete = false;
        QSignalSpy quit(m_f->controller.get(), &ui::DesktopController::quitFinished);
        m_f->controller->tray()->quitAction()->trigger();
        QCOMPARE(m_f->engine->commands().back(), std::string("stop"));
        QCOMPARE(quit.count(), 0);
        QVERIFY(m_f->engine->completeNext());
        QVERIFY(test::waitFor([&] { return quit.count() == 1; }, 5s));
    }

    void nothingToPauseWithoutTraining()
    {
        m_f->controller->stopTraining();
        m_f->sync();
        ui::TrayIcon *tray = m_f->controller->tray();
        QVERIFY(!tray->pauseAction()->isEnabled());
        QCOMPARE(tray->statusAction()->text(), QStringLiteral("Not training"));
    }
};

QTEST_MAIN(TestTray)
#include "tst_tray.moc"
