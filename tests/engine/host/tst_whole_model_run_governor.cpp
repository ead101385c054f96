// SPDX-License-Identifier: GPL-3.0-or-later
// WholeModelRun under the resource governor: work that will not fit is refused up front, a
// pause holds the run without losing the step in flight, and a stop reaches a run the
// governor is holding.
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <mutex>
#include <thread>

#include "engine/common/error.h"
#include "engine/device/governor.h"
#include "engine/host/whole_model_run.h"
#include "engine/store/checkpoint_store.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

host::WholeModelSettings smallRun(const QTemporaryDir &dir)
{
    host::WholeModelSettings s;
    s.steps = 100000;
    s.checkpointEvery = 0;
    s.evalEvery = 0;
    s.trainSamples = 2000;
    s.threads = 1;
    s.dataDir = dir.path().toStdString();
    s.datasetDir = test::fashionMnistDir();
    s.governor.pauseOnBattery = false; // a laptop running the tests on battery should still run them
    return s;
}

// Collects what the run says, from whichever thread says it.
struct Messages
{
    std::mutex mutex;
    QStringList lines;
    std::atomic<int64_t> step{0};
    std::atomic<int64_t> saved{-1};
    host::WholeModelRun::Callbacks callbacks()
    {
        host::WholeModelRun::Callbacks cb;
        cb.message = [this](const std::string &m) {
            std::lock_guard lock(mutex);
            lines << QString::fromStdString(m);
        };
        cb.progress = [this](const host::WholeModelProgress &p) { step = p.step; };
        cb.checkpointSaved = [this](int64_t s) { saved = s; };
        return cb;
    }
    bool heard(const QString &text)
    {
        std::lock_guard lock(mutex);
        return !lines.filter(text).isEmpty();
    }
};

} // namespace

class TestWholeModelRunGovernor : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void refusesWorkThatWillNotFit()
    {
        QTemporaryDir dir;
        auto s = smallRun(dir);
        s.governor.memoryCapMiB = 1; // less than the process holds already
        Messages m;
        host::WholeModelRun run(s, m.callbacks());
        try {
            run.run();
            QFAIL("expected rookery::Error");
        } catch (const Error &e) {
            QVERIFY2(QString(e.what()).contains("the memory cap of 1.0 MiB leaves no room for training mlp"), e.what());
        }
        QVERIFY(store::CheckpointStore(s.dataDir / "rookery.db").list().empty());
    }

    void badGovernorSettingsAreRefused()
    {
        QTemporaryDir dir;
        auto s = smallRun(dir);
        s.governor.whenActive.cpuPercent = 150;
        Messages m;
        QVERIFY_THROWS_EXCEPTION(Error, host::WholeModelRun(s, m.callbacks()));
    }

    // A pause holds the run between steps; a stop then checkpoints exactly the steps done.
    void pauseHoldsAndStopCheckpointsTheStepsDone()
    {
        QTemporaryDir dir;
        const auto s = smallRun(dir);
        Messages m;
        host::WholeModelRun run(s, m.callbacks());
        std::atomic<bool> stop{false};
        host::WholeModelSummary summary;
        std::thread worker([&] { summary = run.run(&stop); });
        const auto joinWorker = qScopeGuard([&] { // also when a check below gives up
            stop = true;
            if (worker.joinable())
                worker.join();
        });
        QVERIFY(test::waitFor([&] { return m.step.load() > 20; }, 60s));
        run.governor().pause();
        QVERIFY(test::waitFor([&] { return m.heard("governor: paused: by the user"); }, 10s));
        QVERIFY(test::waitFor([&] { return run.governor().status().inFlight == 0; }, 10s));
        stop = true; // reaches the run although the governor holds it
        worker.join();
        QVERIFY(summary.stopped);
        QCOMPARE(summary.stopReason, std::string("stopped: on request"));
        QVERIFY(summary.endStep > 20);
        QCOMPARE(m.saved.load(), summary.endStep);
        const auto newest = store::CheckpointStore(s.dataDir / "rookery.db").loadNewest(s.run);
        QCOMPARE(newest->state.step, summary.endStep);
    }

    void idleOnlyHoldsFromTheStart()
    {
        QTemporaryDir dir;
        auto s = smallRun(dir);
        s.governor.runOnlyWhenIdle = true;
        s.governor.idleMinutes = 24 * 60; // nobody here has been idle that long
        Messages m;
        host::WholeModelRun run(s, m.callbacks());
        std::atomic<bool> stop{false};
        host::WholeModelSummary summary;
        std::thread worker([&] { summary = run.run(&stop); });
        const auto joinWorker = qScopeGuard([&] { // also when a check below gives up
            stop = true;
            if (worker.joinable())
                worker.join();
        });
        QVERIFY(test::waitFor([&] { return m.heard("governor: paused: user"); }, 60s));
        stop = true;
        worker.join();
        QVERIFY(summary.stopped);
        QCOMPARE(summary.endStep, int64_t(0));
    }
};

QTEST_APPLESS_MAIN(TestWholeModelRunGovernor)
#include "tst_whole_model_run_governor.moc"
