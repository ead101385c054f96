// SPDX-License-Identifier: GPL-3.0-or-later
// A registration storm over loopback TLS: 500 nodes registering within about 2 s next to a
// working swarm are planned in a bounded number of rounds, the nodes placed before the
// storm keep their seats unless a newcomer joins their cluster, and every node hears of
// few assignment changes.
#include <QtTest>

#include <QTemporaryDir>

#include <map>
#include <set>
#include <thread>

#include "tests/engine/coord/coord_test_support.h"
#include "tests/engine/coord/ring_check.h"

using namespace rookery;
using namespace std::chrono_literals;

class TestCoordinatorStorm : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

private Q_SLOTS:
    void stormIsPlannedInFewRoundsAndKeepsPlacedNodesInPlace()
    {
        QVERIFY(m_dir.isValid());
        auto s = test::testSettings(m_dir.filePath(QStringLiteral("coord")).toStdString());
        // 500 links on a 2-core machine: heartbeats at the production pace.
        s.heartbeatInterval = 1000ms;
        s.heartbeatTimeout = 20s;
        s.rejoinGrace = 20s;
        s.firstPlanDelay = 300ms; // plan the first eight together
        s.planInterval = 20ms;    // unbatched, 2 s of arrivals would be 100 rounds
        s.joinSettle = 300ms;
        s.stormSettle = 600ms; // the storm is over 600 ms after its last arrival
        s.ioThreads = 2;
        s.maxNodes = 1000;
        // Not the subject here, and dialling back 500 test nodes (nobody listens) would
        // take the CPU the storm's clients need: tst_reachability covers the checks.
        s.reachabilityTimeout = 0ms;
        net::NetContext net(2);
        coord::Coordinator coordinator(s);
        const auto address = coordinator.coordinatorAddress();
        const int64_t demand = test::mlpDemandBytes();

        // Before the storm: eight nodes with 60% of the model's memory each, four clusters.
        std::vector<std::unique_ptr<test::TestNode>> placed;
        for (int i = 0; i < 8; ++i) {
            placed.push_back(std::make_unique<test::TestNode>());
            placed.back()->start(net, address, 50, uint64_t(double(demand) * 0.6));
        }
        QVERIFY(test::eventually(
            [&] { return std::all_of(placed.begin(), placed.end(), [](const auto &n) { return n->training(); }); }));
        QTest::qWait(500); // the first plan's round is over
        std::map<std::string, coord::Assignment> before;
        std::map<std::string, size_t> updatesBefore;
        for (const auto &n : placed) {
            before.emplace(n->identity.nodeId(), n->assignment());
            updatesBefore.emplace(n->identity.nodeId(), n->updateCount());
        }
        const uint64_t roundsBefore = coordinator.counters().planRounds;

        // The storm: 500 registrations started within 2 s, of mixed sizes.
        constexpr int kStorm = 500;
        std::vector<std::unique_ptr<test::TestNode>> storm;
        for (int i = 0; i < kStorm; ++i)
            storm.push_back(std::make_unique<test::TestNode>()); // the identities, made beforehand
        // Two starters: a client's start (its TLS context) costs a few ms of CPU.
        const auto stormStart = std::chrono::steady_clock::now();
        auto starter = [&](int from) {
            for (int i = from; i < kStorm; i += 2) {
                const double share[] = {0.3, 0.45, 0.7, 1.1};
                storm[size_t(i)]->start(net, address, 20 + 10 * (i % 5), uint64_t(double(demand) * share[i % 4]));
                std::this_thread::sleep_until(stormStart + i * 3ms);
            }
        };
        std::thread other(starter, 1);
        starter(0);
        other.join();
        const auto startedIn = std::chrono::steady_clock::now() - stormStart;
        // Paced at 3 ms a start; on a loaded machine the starts themselves take longer
        // (2.6 s seen with both cores busy). Not a timing target: the batching bound
        // below holds for any pace at which arrivals are less than 300 ms apart.
        qInfo("storm started in %lld ms",
              (long long)std::chrono::duration_cast<std::chrono::milliseconds>(startedIn).count());
        QVERIFY(test::eventually(
            [&] {
                return std::all_of(storm.begin(), storm.end(),
                                   [](const auto &n) { return n->registrationCount() > 0; });
            },
            120s));
        // Until the planner is quiet: no round for a second.
        uint64_t rounds = coordinator.counters().planRounds;
        QVERIFY(test::eventually(
            [&] {
                QTest::qWait(1000);
                const uint64_t now = coordinator.counters().planRounds;
                return std::exchange(rounds, now) == now;
            },
            60s));

        // A bounded number of rounds: the joins came in batches, each at least twice the
        // swarm's size or after 300 ms without arrivals (about log3(508 / 8) + 1 of them).
        const uint64_t stormRounds = rounds - roundsBefore;
        qInfo("storm of %d registrations: %llu planning rounds", kStorm, static_cast<unsigned long long>(stormRounds));
        QVERIFY2(stormRounds >= 1 && stormRounds <= 8, std::to_string(stormRounds).c_str());

        // Nodes placed before the storm keep their clusters; their seats change only when
        // a newcomer joined their cluster (which re-cuts it), and they heard of at most one
        // change a round, or of one change in all (the rings they are in now) when no
        // newcomer joined their cluster: the storm's growth was held back from them.
        const auto now = coordinator.assignments();
        const std::string whole = test::wholeRings(now);
        QVERIFY2(whole.empty(), whole.c_str());
        std::set<int> joinedClusters;
        size_t training = 0, stormUpdates = 0, mostUpdates = 0;
        std::string mostHeard; // what the node that heard most was told, in order
        for (const auto &n : storm) {
            const auto &a = now.at(n->identity.nodeId());
            if (a.isTraining()) {
                joinedClusters.insert(a.cluster);
                ++training;
            }
            stormUpdates += n->updateCount();
            if (n->updateCount() > mostUpdates) {
                mostUpdates = n->updateCount();
                mostHeard.clear();
                for (const auto &u : n->updatesSince(0))
                    mostHeard += "\n  " + u.describe();
            }
        }
        QVERIFY(training > 0);
        for (const auto &n : placed) {
            const auto &was = before.at(n->identity.nodeId());
            const auto &is = now.at(n->identity.nodeId());
            QVERIFY2(is.isTraining(), is.describe().c_str());
            QCOMPARE(is.cluster, was.cluster);
            const size_t heard = n->updateCount() - updatesBefore.at(n->identity.nodeId());
            if (!joinedClusters.count(was.cluster)) {
                QVERIFY2(test::sameSeat(is, was), (was.describe() + " -> " + is.describe()).c_str());
                QVERIFY2(heard <= 1, (std::to_string(heard) + " updates: " + is.describe()).c_str());
            }
            QVERIFY(heard <= stormRounds);
        }
        // Newcomers hear of their placement and, once the storm is over, of their rings:
        // clusters told their placement take no newcomer while the hold lasts, so none
        // is moved by a later round of the storm.
        qInfo("newcomers heard %zu updates, %.2f each, %zu at most", stormUpdates, double(stormUpdates) / kStorm,
              mostUpdates);
        QVERIFY2(stormUpdates <= 2 * kStorm, std::to_string(stormUpdates).c_str());
        QVERIFY2(mostUpdates <= 2, (std::to_string(mostUpdates) + " updates:" + mostHeard).c_str());
        storm.clear();
        placed.clear();
    }
};

QTEST_GUILESS_MAIN(TestCoordinatorStorm)
#include "tst_coordinator_storm.moc"
