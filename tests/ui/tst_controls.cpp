// SPDX-License-Identifier: GPL-3.0-or-later
// Pause, resume, snooze and stop change the engine's state and the window follows it;
// Quit checkpoints first without blocking (and gives up after a timeout); closing the
// window hides it to the tray and keeps training.
#include <QElapsedTimer>
#include <QLabel>
#include <QMenu>
#include <QProgressDialog>
#include <QPushButton>
#include <QSignalSpy>
#include <QTimer>
#include <QtTest>

#include "tests/ui/ui_fixture.h"
#include "ui/log/event_log_model.h"
#include "ui/log/event_log_view.h"
#include "ui/main/status_banner.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

test::UiFixture *training(test::UiFixture &f, ui::DesktopOptions options = {})
{
    f.storeConsent();
    f.storeDemoChoice();
    f.start(std::move(options));
    if (!f.engine->state().running)
        qFatal("the fixture did not start training");
    return &f;
}

QString lastLogMessage(ui::MainWindow *w)
{
    auto *m = w->eventLog()->model();
    return m->data(m->index(m->rowCount() - 1, ui::EventLogModel::MessageColumn)).toString();
}

} // namespace

class TestControls : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void pauseAndResumeFollowTheEngine()
    {
        test::UiFixture f;
        training(f);
        QAction *action = f.window()->actions().pauseResume;
        QVERIFY(action->isEnabled());
        QCOMPARE(action->text(), QStringLiteral("&Pause"));
        QCOMPARE(f.window()->banner()->actionButton()->accessibleName(), QStringLiteral("Pause training"));

        action->trigger();
        QCOMPARE(f.engine->commands().back(), std::string("pause"));
        QVERIFY(f.engine->state().governor.pausedByUser);
        f.sync();
        QCOMPARE(action->text(), QStringLiteral("&Resume"));
        QCOMPARE(f.window()->banner()->headlineLabel()->text(), QStringLiteral("Paused"));
        QCOMPARE(f.window()->banner()->actionButton()->accessibleName(), QStringLiteral("Resume training"));
        QVERIFY(!f.window()->actions().snoozeMenu->isEnabled());

        // The banner's button does the same.
        f.window()->banner()->actionButton()->click();
        QCOMPARE(f.engine->commands().back(), std::string("resume"));
        QVERIFY(!f.engine->state().governor.pausedByUser);
        f.sync();
        QCOMPARE(action->text(), QStringLiteral("&Pause"));
        QCOMPARE(f.window()->banner()->headlineLabel()->text(), QStringLiteral("Training"));
    }

    void theWindowShowsWhatTheEngineSaysNotWhatWasClicked()
    {
        test::UiFixture f;
        training(f);
        // The engine pauses on its own (a rule); the window follows the snapshot.
        auto s = f.engine->state();
        s.governor.state = "paused";
        s.governor.reason = "paused: on battery";
        f.publish(s);
        QCOMPARE(f.window()->banner()->headlineLabel()->text(), QStringLiteral("Paused by a rule"));
        QCOMPARE(f.window()->banner()->detailLabel()->text(), QStringLiteral("paused: on battery"));
        QCOMPARE(f.window()->actions().pauseResume->text(), QStringLiteral("&Pause")); // not paused by the person
        s.governor.state = "throttled";
        s.governor.reason = "throttled: user active (CPU 25%)";
        s.lastError = "peer hana lost; its stage is being reassigned";
        f.publish(s);
        QCOMPARE(f.window()->banner()->headlineLabel()->text(), QStringLiteral("Training, throttled"));
        QCOMPARE(f.window()->banner()->errorLabel()->text(),
                 QStringLiteral("peer hana lost; its stage is being reassigned"));
        QVERIFY(f.window()->windowTitle().contains(QStringLiteral("Training, throttled")));
    }

    void snoozeAndStop()
    {
        test::UiFixture f;
        training(f);
        f.window()->actions().snooze60->trigger();
        QCOMPARE(f.engine->commands().back(), std::string("snooze:60"));
        f.window()->actions().snooze15->trigger();
        QCOMPARE(f.engine->commands().back(), std::string("snooze:15"));
        f.window()->actions().stop->trigger();
        QCOMPARE(f.engine->commands().back(), std::string("stop"));
        f.sync();
        QVERIFY(!f.window()->actions().pauseResume->isEnabled());
        QCOMPARE(f.window()->banner()->headlineLabel()->text(), QStringLiteral("Not training"));
        QCOMPARE(f.window()->banner()->actionButton()->accessibleName(), QStringLiteral("Start or join a swarm"));
    }

    void quitCheckpointsFirstWithoutBlocking()
    {
        test::UiFixture f;
        training(f);
        f.engine->autoComplete = false;
        QSignalSpy quit(f.controller.get(), &ui::DesktopController::quitFinished);
        f.window()->actions().quit->trigger();
        QCOMPARE(f.engine->commands().back(), std::string("stop"));
        QVERIFY(f.controller->quitProgress());
        QVERIFY(f.controller->quitProgress()->isVisible());
        // While the engine saves, the event loop runs: timers fire, nothing has quit.
        int ticks = 0;
        QTimer timer;
        connect(&timer, &QTimer::timeout, [&] { ++ticks; });
        timer.start(5);
        QTest::qWait(100);
        QVERIFY(ticks > 5);
        QCOMPARE(quit.count(), 0);
        f.window()->actions().quit->trigger(); // asking twice does not stop twice
        QCOMPARE(f.engine->pendingCount(), size_t(1));
        QVERIFY(f.engine->completeNext());
        QVERIFY(test::waitFor([&] { return quit.count() == 1; }, 5s));
        QVERIFY(!f.controller->quitProgress());
    }

    void quitGivesUpAfterTheTimeout()
    {
        test::UiFixture f;
        ui::DesktopOptions o;
        o.quitTimeoutMs = 150;
        training(f, o);
        f.engine->autoComplete = false;
        QSignalSpy quit(f.controller.get(), &ui::DesktopController::quitFinished);
        QElapsedTimer clock;
        clock.start();
        f.controller->requestQuit();
        QVERIFY(test::waitFor([&] { return quit.count() == 1; }, 5s));
        QVERIFY(clock.elapsed() >= 140);
        QVERIFY(lastLogMessage(f.window()).contains(QStringLiteral("without a final checkpoint")));
        QVERIFY(f.engine->completeNext()); // a late answer changes nothing
        f.sync();
        QCOMPARE(quit.count(), 1);
    }

    void theSimulationSaysSo()
    {
        test::UiFixture f;
        ui::DesktopOptions o;
        o.simulation = true;
        f.start(o);
        QVERIFY(f.window()->windowTitle().startsWith(QStringLiteral("Rookery (simulation)")));
        auto *m = f.window()->eventLog()->model();
        bool said = false;
        for (int r = 0; r < m->rowCount(); ++r)
            said = said || m->index(r, ui::EventLogModel::MessageColumn)
                               .data()
                               .toString()
                               .contains(QStringLiteral("Running the simulation"));
        QVERIFY(said);
    }

    void quitWhenIdleIsImmediate()
    {
        test::UiFixture f;
        f.start();
        QSignalSpy quit(f.controller.get(), &ui::DesktopController::quitFinished);
        f.controller->requestQuit();
        QCOMPARE(quit.count(), 1);
        QVERIFY(!f.engine->received("stop"));
    }

    void closingHidesToTheTrayAndKeepsTraining()
    {
        test::UiFixture f;
        ui::DesktopOptions o;
        o.trayAvailable = true;
        training(f, o);
        QSignalSpy quit(f.controller.get(), &ui::DesktopController::quitFinished);
        QVERIFY(f.window()->isVisible());
        f.window()->close();
        f.sync();
        QVERIFY(!f.window()->isVisible());
        QVERIFY(!f.engine->received("stop"));
        QVERIFY(f.engine->state().running);
        QCOMPARE(quit.count(), 0);
        f.controller->showWindow();
        QVERIFY(f.window()->isVisible());
    }

    void closingWithoutATrayQuits()
    {
        test::UiFixture f;
        training(f);
        QSignalSpy quit(f.controller.get(), &ui::DesktopController::quitFinished);
        f.window()->close();
        f.sync();
        QVERIFY(f.engine->received("stop"));
        QVERIFY(test::waitFor([&] { return quit.count() == 1; }, 5s));
        f.window()->close();
        QVERIFY(!f.window()->isVisible()); // now the window may close
    }

    void minimizedStartsInTheTray()
    {
        test::UiFixture f;
        ui::DesktopOptions o;
        o.trayAvailable = true;
        o.minimized = true;
        training(f, o);
        QVERIFY(!f.window()->isVisible());
        QVERIFY(f.engine->state().running);
    }

    void joiningWhileTrainingStopsFirst()
    {
        test::UiFixture f;
        training(f);
        ui::JoinChoice c;
        c.kind = ui::JoinChoice::Kind::Address;
        c.address = QStringLiteral("wss://swarm.example.org:7443/#sha256=00ff");
        f.controller->startChoice(c);
        f.sync();
        const auto commands = f.engine->commands();
        QCOMPARE(commands[commands.size() - 2], std::string("stop"));
        QCOMPARE(commands.back(), std::string("join:wss://swarm.example.org:7443/#sha256=00ff"));
    }

    void aFailedStartIsReported()
    {
        test::UiFixture f;
        f.storeConsent();
        f.start();
        f.engine->autoComplete = false;
        f.controller->startChoice(ui::JoinChoice{});
        QVERIFY(f.engine->completeNext("the coordinator did not answer"));
        f.sync();
        QVERIFY(lastLogMessage(f.window()).contains(QStringLiteral("the coordinator did not answer")));
        QMessageBox *box = test::openMessageBox(f.window());
        QVERIFY(box);
        QCOMPARE(box->informativeText(), QStringLiteral("the coordinator did not answer"));
    }
};

QTEST_MAIN(TestControls)
#include "tst_controls.moc"
