// SPDX-License-Identifier: GPL-3.0-or-later
// The in-process engine the desktop app drives, for real: consent gates compute, a local
// run shows its speed and place, pause reaches the governor, stopping checkpoints into
// the list, checkpoints resume and delete, limits are validated, and the contribution
// totals survive a restart of the engine.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <memory>

#include "engine/host/node_engine.h"
#include "tests/support/command_result.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

constexpr auto kLong = 90s; // a loaded 2-core machine trains slowly

host::NodeEngineSettings settingsIn(const QTemporaryDir &dir)
{
    host::NodeEngineSettings s;
    s.dataDir = dir.path().toStdString();
    s.datasetDir = test::fashionMnistDir();
    s.local.steps = 1'000'000; // runs until stopped
    s.local.checkpointEvery = 0;
    s.local.evalEvery = 0;
    s.local.trainSamples = 2048;
    s.local.threads = 1;
    s.publishInterval = 50ms;
    s.contributionFlushInterval = 1s;
    return s;
}

// Laptops running the tests on battery still run them.
const std::map<std::string, std::string> kOnBatteryToo = {{"pause-on-battery", "false"}};

bool hasEvent(const std::vector<host::EngineEvent> &events, const std::string &text)
{
    return std::any_of(events.begin(), events.end(),
                       [&](const host::EngineEvent &e) { return e.message.find(text) != std::string::npos; });
}

} // namespace

class TestNodeEngine : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<host::NodeEngine> m_engine;
    std::vector<host::EngineEvent> m_events;

    host::EngineSnapshot snap() const { return m_engine->snapshot(); }
    bool eventually(const std::function<bool(const host::EngineSnapshot &)> &p)
    {
        return test::waitFor([&] { return p(snap()); }, kLong);
    }
    void collectEvents()
    {
        for (auto &e : m_engine->takeEvents())
            m_events.push_back(std::move(e));
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_engine = std::make_unique<host::NodeEngine>(settingsIn(m_dir));
        test::CommandResult r;
        m_engine->applyGovernorSettings(kOnBatteryToo, r.callback());
        QCOMPARE(r.wait(kLong), std::string());
    }

    void cleanupTestCase() { m_engine.reset(); }

    void nothingComputesBeforeConsent()
    {
        test::CommandResult r;
        m_engine->startLocal(r.callback());
        QVERIFY2(r.wait(kLong).find("consent") != std::string::npos, "refused for want of consent");
        QVERIFY(!snap().running);
        QVERIFY2(!snap().device.measured, "the speed is measured only after consent");
        QVERIFY(!snap().device.cpuModel.empty()); // what the machine is, unmeasured, shows at once
        QCOMPARE(snap().governor.state, std::string("stopped"));
    }

    void localRunShowsSpeedAndPlace()
    {
        m_engine->setConsent(true);
        QVERIFY(eventually([](const auto &s) { return s.consentGiven && s.device.measured; }));
        QVERIFY(snap().device.gflopsAllThreads > 0);
        test::CommandResult r;
        m_engine->startLocal(r.callback());
        QCOMPARE(r.wait(kLong), std::string());
        QVERIFY(eventually([](const auto &s) { return s.running && s.training.samplesPerSecond > 0; }));
        const auto s = snap();
        QCOMPARE(s.assignment.mode, std::string("local"));
        QCOMPARE(s.assignment.role, std::string("whole model"));
        QCOMPARE(s.assignment.stage, 0);
        QCOMPARE(s.assignment.stageCount, 1);
        QCOMPARE(s.assignment.layers.front(), std::string("Flatten"));
        QVERIFY(QString::fromStdString(s.assignment.model).startsWith(QStringLiteral("mlp")));
        QVERIFY(s.governor.state == "running" || s.governor.state == "throttled");
        QCOMPARE(s.peers.size(), size_t(1));
        QVERIFY(s.peers.front().self);
        QVERIFY(eventually([](const auto &now) { return now.training.step > 0 && now.training.loss > 0; }));
    }

    void pauseHoldsTheGovernorAndResumeReleasesIt()
    {
        m_engine->pause();
        QVERIFY(eventually([](const auto &s) { return s.governor.pausedByUser && s.governor.state == "paused"; }));
        QVERIFY(eventually([](const auto &s) { return s.training.samplesPerSecond == 0; }));
        const int64_t heldAt = snap().training.step;
        m_engine->resume();
        QVERIFY(eventually([](const auto &s) { return !s.governor.pausedByUser && s.training.samplesPerSecond > 0; }));
        QVERIFY(eventually([heldAt](const auto &s) { return s.training.step > heldAt + 1; }));
    }

    void limitsAreValidatedAndReachTheGovernor()
    {
        test::CommandResult bad;
        m_engine->applyGovernorSettings({{"active.cpu-percent", "250"}}, bad.callback());
        QVERIFY2(bad.wait(kLong).find("active.cpu-percent") != std::string::npos, "the error names the key");
        QCOMPARE(m_engine->governorSettings().at("active.cpu-percent"), std::string("100"));
        test::CommandResult good;
        m_engine->applyGovernorSettings({{"active.cpu-percent", "60"}}, good.callback());
        QCOMPARE(good.wait(kLong), std::string());
        QCOMPARE(m_engine->governorSettings().at("active.cpu-percent"), std::string("60"));
        QVERIFY(eventually([](const auto &s) { return s.governor.cpuPercent == 60; }));
        test::CommandResult back;
        m_engine->applyGovernorSettings({{"active.cpu-percent", "100"}}, back.callback());
        QCOMPARE(back.wait(kLong), std::string());
    }

    void stoppingCheckpointsIntoTheList()
    {
        test::CommandResult r;
        m_engine->stopTraining(r.callback());
        QCOMPARE(r.wait(kLong), std::string());
        QVERIFY(eventually([](const auto &s) { return !s.running && !s.checkpoints.empty(); }));
        const auto s = snap();
        QCOMPARE(s.checkpoints.front().run, std::string("local"));
        QVERIFY(s.checkpoints.front().step > 0);
        QCOMPARE(s.assignment.mode, std::string("idle"));
        QCOMPARE(s.training.samplesPerSecond, 0.0);
        QVERIFY(eventually([](const auto &now) { return now.contribution.samplesTotal > 0; }));
        collectEvents();
        QVERIFY(hasEvent(m_events, "checkpoint saved"));
    }

    void resumesAndDeletesCheckpoints()
    {
        const auto first = snap().checkpoints.front();
        test::CommandResult resumed;
        m_engine->resumeCheckpoint(first.id, resumed.callback());
        QCOMPARE(resumed.wait(kLong), std::string());
        QVERIFY(eventually([&](const auto &s) { return s.running && s.training.step > first.step; }));
        test::CommandResult stopped;
        m_engine->stopTraining(stopped.callback());
        QCOMPARE(stopped.wait(kLong), std::string());
        QVERIFY(eventually([](const auto &s) { return !s.running && s.checkpoints.size() >= 2; }));

        const int64_t oldest = snap().checkpoints.back().id;
        test::CommandResult deleted;
        m_engine->deleteCheckpoint(oldest, deleted.callback());
        QCOMPARE(deleted.wait(kLong), std::string());
        const auto list = snap().checkpoints;
        QVERIFY(std::none_of(list.begin(), list.end(), [&](const auto &c) { return c.id == oldest; }));
        test::CommandResult missing;
        m_engine->deleteCheckpoint(oldest, missing.callback());
        QVERIFY(missing.wait(kLong).find("no checkpoint") != std::string::npos);
    }

    void withdrawingConsentStopsTraining()
    {
        test::CommandResult r;
        m_engine->startLocal(r.callback());
        QCOMPARE(r.wait(kLong), std::string());
        QVERIFY(eventually([](const auto &s) { return s.running && s.training.samplesPerSecond > 0; }));
        const size_t before = snap().checkpoints.size();
        m_engine->setConsent(false);
        QVERIFY(eventually([](const auto &s) { return !s.running && !s.consentGiven; }));
        QVERIFY(eventually([before](const auto &s) { return s.checkpoints.size() > before; }));
        test::CommandResult refused;
        m_engine->startLocal(refused.callback());
        QVERIFY(refused.wait(kLong).find("consent") != std::string::npos);
    }

    void contributionSurvivesARestart()
    {
        const auto given = snap().contribution;
        QVERIFY(given.samplesTotal > 0);
        QVERIFY(given.computeHoursTotal > 0);
        QCOMPARE(given.samplesToday, given.samplesTotal);
        m_engine.reset(); // saves the last figures
        m_engine = std::make_unique<host::NodeEngine>(settingsIn(m_dir));
        QVERIFY(eventually([&](const auto &s) { return s.sequence > 0; }));
        const auto again = snap().contribution;
        QCOMPARE(again.samplesTotal, given.samplesTotal);
        QCOMPARE(again.samplesToday, given.samplesToday);
        QCOMPARE(again.computeHoursTotal, given.computeHoursTotal);
        QVERIFY(!snap().checkpoints.empty()); // and the checkpoints are listed again
    }
};

QTEST_GUILESS_MAIN(TestNodeEngine)
#include "tst_node_engine.moc"
