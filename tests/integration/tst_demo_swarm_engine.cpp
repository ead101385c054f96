// SPDX-License-Identifier: GPL-3.0-or-later
// The desktop app's local demo swarm, for real: the in-process engine starts a
// coordinator and a rookery-node from the build tree, joins as the second node, and
// shows its place in the swarm, the peer graph and its speed; pause holds its stage and
// stopping checkpoints the stage and stops the processes.
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

constexpr auto kLong = 180s; // two nodes and a coordinator on a loaded 2-core machine

} // namespace

class TestDemoSwarmEngine : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<host::NodeEngine> m_engine;

    host::EngineSnapshot snap() const { return m_engine->snapshot(); }
    bool eventually(const std::function<bool(const host::EngineSnapshot &)> &p)
    {
        return test::waitFor([&] { return p(snap()); }, kLong);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        host::NodeEngineSettings s;
        s.dataDir = m_dir.path().toStdString();
        s.datasetDir = test::fashionMnistDir();
        s.binDir = QFileInfo(test::programPath(QStringLiteral("rookery-node"))).absolutePath().toStdString();
        s.demo.coordinatorArgs = {"--steps", "100000", "--first-plan-delay-ms", "60000"}; // a long run
        s.publishInterval = 100ms;
        m_engine = std::make_unique<host::NodeEngine>(s);
        test::CommandResult r;
        m_engine->applyGovernorSettings({{"pause-on-battery", "false"}}, r.callback());
        QCOMPARE(r.wait(kLong), std::string());
        m_engine->setConsent(true);
    }

    void cleanupTestCase() { m_engine.reset(); }

    void joinsTheDemoSwarmItStarted()
    {
        test::CommandResult r;
        m_engine->startDemoSwarm(2, r.callback());
        QCOMPARE(r.wait(kLong), std::string());
        QVERIFY(eventually([](const auto &s) {
            return s.running && s.assignment.cluster >= 0 && s.peers.size() == 2 && s.training.samplesPerSecond > 0;
        }));
        const auto s = snap();
        QCOMPARE(s.assignment.mode, std::string("swarm"));
        QCOMPARE(s.assignment.clusterCount, 1);
        QCOMPARE(s.assignment.stageCount, 2); // two stages per cluster
        QVERIFY(s.assignment.role == "root" || s.assignment.role == "leaf");
        QVERIFY(!s.assignment.layers.empty());
        QCOMPARE(std::count_if(s.peers.begin(), s.peers.end(), [](const auto &p) { return p.self; }), 1L);
        QVERIFY(std::any_of(s.links.begin(), s.links.end(),
                            [](const auto &l) { return l.kind == host::PeerLinkView::Kind::Pipeline; }));
    }

    void pauseHoldsThisNodesStage()
    {
        m_engine->pause();
        QVERIFY(eventually([](const auto &s) {
            return s.governor.pausedByUser && s.governor.state == "paused" && s.training.samplesPerSecond == 0;
        }));
        QVERIFY(snap().running); // still in the swarm
        m_engine->resume();
        QVERIFY(eventually([](const auto &s) { return !s.governor.pausedByUser && s.training.samplesPerSecond > 0; }));
    }

    void stoppingCheckpointsTheStage()
    {
        test::CommandResult r;
        m_engine->stopTraining(r.callback());
        QCOMPARE(r.wait(kLong), std::string());
        QVERIFY(eventually([](const auto &s) {
            return !s.running && std::any_of(s.checkpoints.begin(), s.checkpoints.end(),
                                             [](const auto &c) { return c.run.rfind("swarm:", 0) == 0; });
        }));
        QVERIFY(snap().contribution.samplesTotal > 0);
    }
};

QTEST_GUILESS_MAIN(TestDemoSwarmEngine)
#include "tst_demo_swarm_engine.moc"
