// SPDX-License-Identifier: GPL-3.0-or-later
// Membership over loopback TLS: failure detection by timeout, the rejoin grace period,
// re-plans on leave that move only what they must, and a graceful Leave.
#include <QtTest>

#include <QTemporaryDir>

#include <algorithm>
#include <map>
#include <set>

#include "engine/common/wall_clock.h"
#include "engine/net/dialer.h"
#include "tests/engine/coord/coord_test_support.h"
#include "tests/engine/net/link_test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

class TestCoordinatorMembership : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    int m_round = 0;
    std::unique_ptr<net::NetContext> m_net;
    std::unique_ptr<coord::Coordinator> m_coordinator;
    std::vector<std::unique_ptr<test::TestNode>> m_nodes;

    // Six equal nodes, each with 68% of what the MLP needs: three clusters of two. Too
    // little to hold the model alone, enough for a stage of a 3-stage pipeline (below
    // about 62% the MLP's middle stage no longer fits one, since the planner counts what
    // the layers save for the backward).
    void startSwarm(std::chrono::milliseconds grace)
    {
        auto s = test::testSettings(m_dir.filePath(QStringLiteral("coord-%1").arg(++m_round)).toStdString());
        s.rejoinGrace = grace;
        s.firstPlanDelay = 500ms; // plan the six together
        m_coordinator = std::make_unique<coord::Coordinator>(s);
        const uint64_t memory = uint64_t(double(test::mlpDemandBytes()) * 0.68);
        for (int i = 0; i < 6; ++i) {
            m_nodes.push_back(std::make_unique<test::TestNode>());
            m_nodes.back()->start(*m_net, m_coordinator->coordinatorAddress(), 50, memory);
        }
        // Training, and the update that said so has reached the node's callback too (the
        // client holds the assignment a moment before it calls back).
        QVERIFY(test::eventually([&] {
            return std::all_of(m_nodes.begin(), m_nodes.end(),
                               [](const auto &n) { return n->training() && n->settled(); });
        }));
        std::set<int> clusters;
        for (const auto &n : m_nodes)
            clusters.insert(n->assignment().cluster);
        QCOMPARE(clusters.size(), size_t(3));
    }

    std::map<std::string, coord::Assignment> current() const
    {
        std::map<std::string, coord::Assignment> m;
        for (const auto &n : m_nodes)
            if (n->client)
                m.emplace(n->identity.nodeId(), n->assignment());
        return m;
    }

    test::TestNode *partnerOf(const test::TestNode &n)
    {
        for (auto &o : m_nodes)
            if (o.get() != &n && o->assignment().cluster == n.assignment().cluster)
                return o.get();
        return nullptr;
    }

private Q_SLOTS:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_net = std::make_unique<net::NetContext>(1);
    }

    void cleanup()
    {
        m_nodes.clear();
        m_coordinator.reset();
        m_net.reset();
    }

    void lostNodeKeepsItsPlaceForTheGracePeriodThenIsReplannedAway()
    {
        startSwarm(1500ms);
        const auto before = current();
        test::TestNode &lost = *m_nodes[0];
        test::TestNode *partner = partnerOf(lost);
        QVERIFY(partner);
        const size_t partnerUpdates = partner->updateCount();
        lost.client->stop(); // a crash: no Leave
        QVERIFY(test::eventually(
            [&] { return m_coordinator->statusJson().find("\"presence\":\"lost\"") != std::string::npos; }));
        // Inside the grace period nobody moves, but the rings skip the halted cluster:
        // its partner averages alone, and the other clusters without it.
        const int haltedCluster = lost.assignment().cluster;
        const auto alone = [](const coord::Assignment &a) {
            return std::all_of(a.rings.begin(), a.rings.end(),
                               [](const auto &r) { return r.alone() && r.next.empty(); });
        };
        QVERIFY(
            test::eventually([&] { return partner->updateCount() > partnerUpdates && alone(partner->assignment()); }));
        QVERIFY(partner->assignment().sameExceptRings(before.at(partner->identity.nodeId())));
        // The registry takes a round's assignments one node at a time: read until the
        // other clusters' new rings are in too.
        std::map<std::string, coord::Assignment> skipping;
        const auto ringsSkipTheHaltedCluster = [&] {
            skipping = current();
            for (const auto &[id, a] : skipping)
                for (const auto &r : a.rings) // every member is some member's neighbour
                    for (const auto *m : {&r.previous, &r.next})
                        if (id != lost.identity.nodeId() && !m->empty() && m->nodeId != id &&
                            skipping.at(m->nodeId).cluster == haltedCluster)
                            return false;
            return true;
        };
        QVERIFY(test::eventually(ringsSkipTheHaltedCluster));
        for (const auto &[id, a] : skipping)
            if (id != lost.identity.nodeId())
                QVERIFY2(a.sameExceptRings(before.at(id)), a.describe().c_str());
        const size_t skipped = partner->updateCount();
        QTest::qWait(300); // well inside the grace period: nothing else moves
        QCOMPARE(partner->updateCount(), skipped);
        // After the grace period the lost node is re-planned away; its partner cannot
        // hold the model alone, so it joins another cluster.
        QVERIFY(test::eventually([&] { return partner->updateCount() > skipped; }, 10s));
        QVERIFY(test::eventually([&] { return partner->training(); }));
        const int newCluster = partner->assignment().cluster;
        QVERIFY(newCluster != before.at(partner->identity.nodeId()).cluster);
        for (const auto &[id, a] : current()) {
            if (id == lost.identity.nodeId() || id == partner->identity.nodeId())
                continue;
            if (a.cluster != newCluster)
                QVERIFY2(test::sameSeat(a, before.at(id)), a.describe().c_str()); // an untouched cluster
            else
                QCOMPARE(a.cluster, before.at(id).cluster); // the receiving cluster keeps its members
        }
        const auto status = m_coordinator->statusJson();
        QVERIFY(status.find("\"presence\":\"gone\"") != std::string::npos);
    }

    // A volunteer pauses (its heartbeats go on, saying why): its cluster halts, so the
    // rings skip that cluster at once; it takes the rings back when the volunteer resumes;
    // paused past the grace, the cluster is re-planned without it, and it is placed again
    // when it resumes.
    void pausedNodesClusterLeavesTheRingsAndIsReplannedAfterTheGrace()
    {
        startSwarm(2500ms);
        const auto before = current();
        test::TestNode &paused = *m_nodes[0];
        test::TestNode *partner = partnerOf(paused);
        QVERIFY(partner);
        const int haltedCluster = paused.assignment().cluster;
        const auto ringsWithout = [&](int cluster) {
            const auto now = current();
            for (const auto &[id, a] : now)
                for (const auto &r : a.rings)
                    for (const auto *m : {&r.previous, &r.next}) {
                        const bool other = !m->empty() && m->nodeId != id;
                        if (other && (a.cluster == cluster || now.at(m->nodeId).cluster == cluster))
                            return false;
                    }
            return true;
        };
        const auto ringsAsBefore = [&] {
            for (const auto &[id, a] : current())
                if (!(a.rings == before.at(id).rings))
                    return false;
            return true;
        };
        QVERIFY(!ringsWithout(haltedCluster));

        coord::NodeReport report;
        report.activity = coord::NodeActivity::Paused;
        report.away = coord::AwayReason::OnBattery;
        paused.client->report(report);
        QVERIFY(test::eventually([&] { return ringsWithout(haltedCluster); }));
        for (const auto &[id, a] : current())
            QVERIFY2(a.sameExceptRings(before.at(id)), a.describe().c_str()); // nobody moved
        const auto status = m_coordinator->statusJson();
        QVERIFY2(status.find("\"away\":\"on battery\"") != std::string::npos, status.c_str());

        report.activity = coord::NodeActivity::Training;
        report.away = coord::AwayReason::None;
        paused.client->report(report);
        QVERIFY(test::eventually([&] { return ringsAsBefore(); }));

        // Paused for longer than the grace: the cluster is re-planned without it.
        report.activity = coord::NodeActivity::Paused;
        report.away = coord::AwayReason::PausedByUser;
        paused.client->report(report);
        QVERIFY(test::eventually([&] { return ringsWithout(haltedCluster); }));
        QVERIFY(test::eventually([&] { return !paused.training(); }, 10s));
        QVERIFY2(paused.assignment().reason.find("paused for longer than the grace") != std::string::npos,
                 paused.assignment().reason.c_str());
        // Its partner cannot hold the model alone: it moves to another cluster.
        QVERIFY(test::eventually(
            [&] {
                return partner->training() &&
                       !test::sameSeat(partner->assignment(), before.at(partner->identity.nodeId()));
            },
            10s));

        // It resumes (a waiting node reports Waiting): placed again.
        report.activity = coord::NodeActivity::Waiting;
        report.away = coord::AwayReason::None;
        paused.client->report(report);
        QVERIFY(test::eventually([&] { return paused.training(); }, 10s));
    }

    void quickRestartResumesTheSameStage()
    {
        startSwarm(5000ms);
        test::TestNode &node = *m_nodes[1];
        const auto before = current();
        std::map<std::string, size_t> updates;
        for (const auto &n : m_nodes)
            updates[n->identity.nodeId()] = n->updateCount();
        node.client.reset(); // the process dies...
        QVERIFY(test::eventually(
            [&] { return m_coordinator->statusJson().find("\"presence\":\"lost\"") != std::string::npos; }));
        test::TestNode again; // ...and comes back with the same identity
        again.identity = node.identity;
        again.start(*m_net, m_coordinator->coordinatorAddress(), 50, uint64_t(double(test::mlpDemandBytes()) * 0.68));
        QVERIFY(test::eventually([&] { return again.registrationCount() == 1; }));
        QVERIFY(again.client->registration()->assignment.sameExceptRings(before.at(node.identity.nodeId())));
        // While it was away its cluster left the rings (skipAway); now everything is as
        // before, rings included, and nobody moved meanwhile.
        const auto asBefore = [&] {
            for (const auto &n : m_nodes)
                if (n->client && !n->assignment().samePlacement(before.at(n->identity.nodeId())))
                    return false;
            return again.assignment().samePlacement(before.at(node.identity.nodeId()));
        };
        QVERIFY(test::eventually(asBefore));
        for (const auto &n : m_nodes)
            if (n->client)
                for (const auto &a : n->updatesSince(updates[n->identity.nodeId()]))
                    QVERIFY2(a.sameExceptRings(before.at(n->identity.nodeId())), a.describe().c_str());
    }

    void gracefulLeaveReplansAtOnce()
    {
        startSwarm(60s); // only an immediate re-plan can move the partner in time
        test::TestNode &leaver = *m_nodes[2];
        test::TestNode *partner = partnerOf(leaver);
        const size_t partnerUpdates = partner->updateCount();
        leaver.client->leave("moving house");
        QVERIFY(test::eventually([&] { return partner->updateCount() > partnerUpdates; }, 10s));
        QVERIFY(m_coordinator->statusJson().find("\"presence\":\"left\"") != std::string::npos);
        QCOMPARE(m_coordinator->assignments().at(leaver.identity.nodeId()).state, coord::AssignmentState::Stopped);
    }

    void silentNodeIsDetectedByTimeout()
    {
        auto s = test::testSettings(m_dir.filePath(QStringLiteral("coord-%1").arg(++m_round)).toStdString());
        m_coordinator = std::make_unique<coord::Coordinator>(s);
        // A node that registers and then never sends a heartbeat (hung, not crashed).
        const net::Identity id = net::Identity::generate();
        auto log = std::make_shared<test::EventLog>();
        net::LinkConfig lc;
        lc.nodeId = id.nodeId();
        auto dc = net::coordinatorDialConfig(m_coordinator->coordinatorAddress(),
                                             {id.selfSignedCertificate(), id.privateKeyPem(), ""}, lc);
        dc.reconnect = false;
        auto link = net::dial(*m_net, dc, log->events());
        QVERIFY(test::eventually([&] { return log->openedCount() == 1; }));
        net::Register r;
        r.listenAddress = "127.0.0.1:7999";
        r.profileJson = test::profileJson(50, uint64_t(test::mlpDemandBytes()) * 2);
        r.nonce = std::string(16, 'q');
        r.timestampMs = nowMs();
        r.publicKeyPem = id.publicKeyPem();
        QCOMPARE(link->send(r), net::SendResult::Queued);
        QVERIFY(test::eventually([&] { return log->closedCount() == 1; }, 10s));
        QVERIFY2(log->lastClose().reason.find("no heartbeat for 600 ms") != std::string::npos,
                 log->lastClose().reason.c_str());
        QVERIFY(test::eventually(
            [&] { return m_coordinator->statusJson().find("\"presence\":\"gone\"") != std::string::npos; }));
    }

    void newerConnectionReplacesTheOld()
    {
        auto s = test::testSettings(m_dir.filePath(QStringLiteral("coord-%1").arg(++m_round)).toStdString());
        m_coordinator = std::make_unique<coord::Coordinator>(s);
        test::TestNode first;
        first.start(*m_net, m_coordinator->coordinatorAddress(), 50, uint64_t(test::mlpDemandBytes()) * 2);
        QVERIFY(test::eventually([&] { return first.training(); }));
        const auto assignment = first.assignment();
        // The node restarts before its old link has timed out.
        test::TestNode second;
        second.identity = first.identity;
        second.start(*m_net, m_coordinator->coordinatorAddress(), 50, uint64_t(test::mlpDemandBytes()) * 2);
        QVERIFY(test::eventually([&] { return second.registrationCount() == 1; }));
        first.client->stop(); // the old process is gone; here it would come back and take turns
        QCOMPARE(second.client->registration()->assignment, assignment);
        QVERIFY(test::eventually([&] { return first.disconnectCount() >= 1; }));
        QCOMPARE(m_coordinator->counters().nodesKnown, size_t(1));
        QTest::qWait(300);
        QVERIFY(second.client->isRegistered());
        QCOMPARE(second.assignment(), assignment);
    }
};

QTEST_APPLESS_MAIN(TestCoordinatorMembership)
#include "tst_coordinator_membership.moc"
