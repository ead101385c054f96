// SPDX-License-Identifier: GPL-3.0-or-later
// EngineBridge: the one door to the engine. Snapshots only when new, one wake-up for many
// notifications, results hopped onto the UI thread, nothing delivered after it is gone.
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include "tests/fakes/fake_engine.h"
#include "tests/support/test_support.h"
#include "ui/bridge/engine_bridge.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

host::EngineEvent makeEvent(const std::string &message)
{
    host::EngineEvent e;
    e.message = message;
    e.area = "train";
    return e;
}

} // namespace

class TestEngineBridge : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void emitsOnlyWhenTheSequenceChanges()
    {
        auto fake = std::make_shared<test::FakeEngine>();
        ui::EngineBridge bridge(fake, 10'000);
        QSignalSpy spy(&bridge, &ui::EngineBridge::snapshotChanged);
        bridge.pollNow();
        QCOMPARE(spy.count(), 1); // the first copy always counts
        bridge.pollNow();
        bridge.pollNow();
        QCOMPARE(spy.count(), 1);
        host::EngineSnapshot s;
        s.training.step = 42;
        fake->publish(s);
        bridge.pollNow();
        QCOMPARE(spy.count(), 2);
        QCOMPARE(bridge.snapshot().training.step, int64_t(42));
        QCOMPARE(spy.last().at(0).value<host::EngineSnapshot>().training.step, int64_t(42));
    }

    void pollsOnItsTimer()
    {
        auto fake = std::make_shared<test::FakeEngine>();
        ui::EngineBridge bridge(fake, 20);
        QSignalSpy spy(&bridge, &ui::EngineBridge::snapshotChanged);
        host::EngineSnapshot s;
        s.training.loss = 1.5;
        fake->publish(s);
        QVERIFY(test::waitFor([&] { return bridge.snapshot().training.loss == 1.5; }, 5s));
        const int reads = fake->snapshotReads();
        QVERIFY(test::waitFor([&] { return fake->snapshotReads() > reads + 2; }, 5s));
        QCOMPARE(spy.count(), 1); // polled again and again, but one new snapshot: one signal
    }

    void manyNotificationsMakeOneWakeUp()
    {
        auto fake = std::make_shared<test::FakeEngine>();
        ui::EngineBridge bridge(fake, 10'000);
        QSignalSpy spy(&bridge, &ui::EngineBridge::eventsArrived);
        for (int i = 0; i < 3; ++i)
            fake->pushEvent(makeEvent("e" + std::to_string(i)));
        fake->notifyFromThread(200); // before the UI thread runs at all
        QCOMPARE(fake->takes(), 0);  // nothing happens on the engine's thread
        QVERIFY(test::waitFor([&] { return spy.count() > 0; }, 5s));
        QTest::qWait(50);
        QCOMPARE(fake->takes(), 1);
        QCOMPARE(spy.count(), 1);
        const auto events = spy.at(0).at(0).value<QList<host::EngineEvent>>();
        QCOMPARE(events.size(), 3);
        QCOMPARE(events.at(2).message, std::string("e2"));

        // The flag is clear again: the next notification wakes the bridge again.
        fake->pushEvent(makeEvent("later"));
        fake->notifyFromThread(1);
        QVERIFY(test::waitFor([&] { return spy.count() == 2; }, 5s));
        QCOMPARE(fake->takes(), 2);
    }

    void resultsArriveOnTheUiThread()
    {
        auto fake = std::make_shared<test::FakeEngine>();
        fake->autoComplete = false;
        fake->setConsent(true);
        ui::EngineBridge bridge(fake, 10'000);
        QSignalSpy finished(&bridge, &ui::EngineBridge::commandFinished);
        QThread *calledOn = nullptr;
        QString error = QStringLiteral("unset");
        bridge.startDemoSwarm(4, [&](const QString &e) {
            calledOn = QThread::currentThread();
            error = e;
        });
        QVERIFY(fake->received("demo-swarm:4"));
        QCOMPARE(fake->pendingCount(), size_t(1));
        QVERIFY(fake->completeNext("no coordinator")); // on another thread
        QCOMPARE(calledOn, nullptr);                   // not yet: it was posted, not called
        QVERIFY(test::waitFor([&] { return calledOn != nullptr; }, 5s));
        QCOMPARE(calledOn, QThread::currentThread());
        QCOMPARE(error, QStringLiteral("no coordinator"));
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.at(0).at(0).toString(), QStringLiteral("demo-swarm"));
    }

    void commandsReachTheEngine()
    {
        auto fake = std::make_shared<test::FakeEngine>();
        ui::EngineBridge bridge(fake, 10'000);
        bridge.setConsent(true);
        bridge.pause();
        bridge.resume();
        bridge.snooze(15);
        bridge.joinSwarm(QStringLiteral("wss://a.example:7443/#sha256=ab"));
        bridge.deleteCheckpoint(7);
        const std::vector<std::string> expected = {
            "consent:true",       "pause", "resume", "snooze:15", "join:wss://a.example:7443/#sha256=ab",
            "delete-checkpoint:7"};
        QCOMPARE(fake->commands(), expected);
    }

    void nothingArrivesAfterTheBridgeIsGone()
    {
        auto fake = std::make_shared<test::FakeEngine>();
        fake->autoComplete = false;
        bool called = false;
        {
            ui::EngineBridge bridge(fake, 10'000);
            QVERIFY(fake->hasNotifier());
            bridge.stopTraining([&](const QString &) { called = true; });
        }
        QVERIFY(!fake->hasNotifier());
        QVERIFY(fake->completeNext()); // the engine answers late: ignored, no crash
        fake->notifyFromThread(3);
        QTest::qWait(50);
        QVERIFY(!called);
    }
};

QTEST_MAIN(TestEngineBridge)
#include "tst_engine_bridge.moc"
