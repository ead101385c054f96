// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <algorithm>

#include "engine/common/error.h"
#include "engine/swarm/cluster_formation.h"
#include "engine/swarm/replan.h"

using namespace rookery;
using namespace rookery::swarm;

namespace {

constexpr int64_t kMiB = 1 << 20;

// A heterogeneous population like a volunteer swarm: laptops, desktops, a few servers.
std::vector<Capacity> population(int n, uint64_t seed)
{
    uint64_t s = seed;
    auto next = [&] {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return s >> 33;
    };
    const double gflops[] = {8, 20, 45, 90, 250};
    const int64_t memory[] = {256 * kMiB, 512 * kMiB, 1024 * kMiB, 2048 * kMiB};
    const double bandwidth[] = {2e6, 10e6, 50e6, 120e6};
    std::vector<Capacity> v;
    for (int i = 0; i < n; ++i)
        v.push_back({gflops[next() % 5], memory[next() % 4], bandwidth[next() % 4]});
    return v;
}

ModelDemand demand()
{
    // Roughly a 100M-parameter model trained with AdamW at batch 32.
    return {1600 * kMiB, 6 * 100e6, 32 * 1024, 8};
}

// Volunteers in arrival order, cut into clusters of equal count: the naive baseline.
Clustering equalCountClustering(const std::vector<Capacity> &v, int clusters, const ModelDemand &d)
{
    std::vector<int> genes(v.size());
    for (size_t i = 0; i < v.size(); ++i)
        genes[i] = int(i * size_t(clusters) / v.size());
    return evaluate(v, genes, d);
}

// Where a newcomer goes, found the slow way: the whole swarm evaluated for every choice
// (each cluster with room, and a new cluster of the newcomer and the fastest waiting
// volunteers), the rule planJoin documents. planJoin must choose the same.
std::vector<int> placedTheSlowWay(const std::vector<Capacity> &v, std::vector<int> clusterOf, size_t i,
                                  const ModelDemand &d)
{
    clusterOf[i] = -1;
    double bestSpeed = evaluate(v, clusterOf, d).swarmSpeed;
    std::vector<int> best = clusterOf;
    int k = 0;
    for (int c : clusterOf)
        k = std::max(k, c + 1);
    for (int c = 0; c < k; ++c) {
        const auto n = std::count(clusterOf.begin(), clusterOf.end(), c);
        if (n == 0 || n >= d.maxStages)
            continue;
        auto trial = clusterOf;
        trial[i] = c;
        const double s = evaluate(v, trial, d).swarmSpeed;
        if (s > bestSpeed || (best[i] == -1 && s >= bestSpeed && bestSpeed > 0)) {
            bestSpeed = s;
            best = trial;
        }
    }
    std::vector<size_t> waiting;
    for (size_t j = 0; j < v.size(); ++j)
        if (clusterOf[j] == -1 && j != i)
            waiting.push_back(j);
    std::stable_sort(waiting.begin(), waiting.end(), [&](size_t a, size_t b) { return v[a].gflops > v[b].gflops; });
    auto trial = clusterOf;
    trial[i] = k;
    int used = 1;
    for (size_t j : waiting) {
        if (used >= d.maxStages || evaluate(v, trial, d).clusterFeasible.back())
            break;
        trial[j] = k;
        ++used;
    }
    const auto e = evaluate(v, trial, d);
    if (e.clusterFeasible.back() && e.swarmSpeed > bestSpeed)
        best = trial;
    return best;
}

} // namespace

class TestClusterFormation : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void everyClusterHoldsTheModelAndBeatsBaselines_data()
    {
        QTest::addColumn<int>("volunteers");
        QTest::addColumn<int>("seed");
        QTest::newRow("24 volunteers") << 24 << 1;
        QTest::newRow("60 volunteers") << 60 << 2;
        QTest::newRow("150 volunteers") << 150 << 3;
    }

    void everyClusterHoldsTheModelAndBeatsBaselines()
    {
        QFETCH(int, volunteers);
        QFETCH(int, seed);
        const auto v = population(volunteers, uint64_t(seed));
        const auto d = demand();
        const Clustering plan = formClusters(v, d, {uint64_t(seed), 40, 150});
        for (size_t c = 0; c < plan.clusterFeasible.size(); ++c)
            QVERIFY2(plan.clusterFeasible[c], qPrintable(QStringLiteral("cluster %1 cannot hold the model").arg(c)));
        for (int c : plan.clusterOf)
            QVERIFY(c >= 0);
        const int k = plan.clusterCount();
        const Clustering random = randomClustering(v, k, d, 99);
        const Clustering equal = equalCountClustering(v, k, d);
        qInfo("%d volunteers -> %d clusters; swarm speed %.0f samples/s, imbalance %.2f | random: %.0f, %.2f | "
              "equal count: %.0f, %.2f",
              volunteers, k, plan.swarmSpeed, plan.imbalance(), random.swarmSpeed, random.imbalance(), equal.swarmSpeed,
              equal.imbalance());
        QVERIFY(plan.swarmSpeed > random.swarmSpeed);
        QVERIFY(plan.swarmSpeed > equal.swarmSpeed);
        QVERIFY(plan.imbalance() < random.imbalance());
        QVERIFY(plan.imbalance() < equal.imbalance());
    }

    void deterministicForASeed()
    {
        const auto v = population(50, 7);
        QCOMPARE(formClusters(v, demand(), {5}).clusterOf, formClusters(v, demand(), {5}).clusterOf);
    }

    void aFixedClusterSizeDealsFastAndSlowEvenly()
    {
        std::vector<Capacity> v;
        for (double g : {10.0, 80.0, 20.0, 40.0, 30.0})
            v.push_back({g, 2048 * kMiB, 50e6});
        FormationOptions o;
        o.clusterSize = 2;
        const auto c = formClusters(v, demand(), o);
        QCOMPARE(c.clusterCount(), 2); // five volunteers in clusters of two: one of them is three
        // Fastest first, back and forth: 80 -> 0, 40 -> 1, 30 -> 1, 20 -> 0, 10 -> 0.
        QCOMPARE(c.clusterOf, (std::vector<int>{0, 0, 0, 1, 1}));
        o.clusterSize = 4;
        QCOMPARE(formClusters(v, demand(), o).clusterCount(), 1);
    }

    void refusesWhatCannotWork()
    {
        auto v = population(3, 1);
        for (auto &c : v)
            c.memoryBytes = 100 * kMiB;
        QVERIFY_THROWS_EXCEPTION(Error, formClusters(v, demand()));
        QVERIFY_THROWS_EXCEPTION(Error, formClusters({}, demand()));
        v[0].gflops = 0;
        QVERIFY_THROWS_EXCEPTION(Error, formClusters(v, demand()));
    }

    void leavingWithSlackMovesNobody()
    {
        // Two clusters of four 1 GiB machines; the model needs 1.6 GiB: each cluster has slack.
        std::vector<Capacity> v(8, Capacity{50, 1024 * kMiB, 50e6});
        std::vector<int> plan = {0, 0, 0, 0, 1, 1, 1, 1};
        const Replan r = planLeave(v, plan, 2, demand());
        QVERIFY(r.moved.empty());
        QCOMPARE(r.clustering.clusterOf[2], -1);
        QVERIFY(r.clustering.clusterFeasible[0] && r.clustering.clusterFeasible[1]);
    }

    void leavingATightClusterMovesOnlyItsMembers()
    {
        // Cluster 0 has exactly enough memory; cluster 1 and 2 have room to spare.
        std::vector<Capacity> v = {{50, 800 * kMiB, 50e6},  {50, 800 * kMiB, 50e6}, // cluster 0
                                   {50, 1024 * kMiB, 50e6}, {50, 1024 * kMiB, 50e6}, {50, 1024 * kMiB, 50e6},
                                   {50, 1024 * kMiB, 50e6}, {50, 1024 * kMiB, 50e6}};
        std::vector<int> plan = {0, 0, 1, 1, 2, 2, 2};
        const Replan r = planLeave(v, plan, 0, demand());
        QCOMPARE(r.moved, std::vector<size_t>{1}); // only the orphan
        for (size_t i = 2; i < v.size(); ++i)
            QCOMPARE(r.clustering.clusterOf[i], plan[i]);
        QVERIFY(r.clustering.clusterOf[1] == 1 || r.clustering.clusterOf[1] == -1);
    }

    void joiningMovesNobodyElse()
    {
        std::vector<Capacity> v(9, Capacity{50, 1024 * kMiB, 50e6});
        v[8].gflops = 200;
        std::vector<int> plan = {0, 0, 1, 1, 1, 2, 2, 2, -1};
        const Replan r = planJoin(v, plan, 8, demand());
        QVERIFY(r.moved.empty());
        QCOMPARE(r.clustering.clusterOf[8], 0); // the slowest cluster gains most
        for (size_t i = 0; i < 8; ++i)
            QCOMPARE(r.clustering.clusterOf[i], plan[i]);
    }

    void aClosedClusterTakesNoNewcomer()
    {
        // The same swarm as above: the newcomer would join cluster 0. Closed (a storm:
        // its members were told their stages), it goes to the next best, cluster 1.
        std::vector<Capacity> v(9, Capacity{50, 1024 * kMiB, 50e6});
        v[8].gflops = 200;
        const std::vector<int> plan = {0, 0, 1, 1, 1, 2, 2, 2, -1};
        const Replan open = planJoin(v, plan, 8, demand());
        QCOMPARE(open.clustering.clusterOf[8], 0);
        const Replan closed = planJoin(v, plan, 8, demand(), {0});
        QVERIFY(closed.clustering.clusterOf[8] != 0);
        QVERIFY(closed.clustering.clusterOf[8] >= 1);
        QVERIFY(closed.moved.empty());
        // All closed and no one waiting to form a new cluster with: it waits.
        const Replan none = planJoin(v, plan, 8, demand(), {0, 1, 2});
        QCOMPARE(none.clustering.clusterOf[8], -1);
        for (size_t i = 0; i < 8; ++i)
            QCOMPARE(none.clustering.clusterOf[i], plan[i]);
    }

    // planJoin judges one cluster at a time (O(volunteers) a join, for 10,000 of them);
    // over random swarms it places every newcomer where evaluating the whole swarm for
    // every choice would: into a cluster, into a new one, or left waiting.
    void joinsChooseWhatEvaluatingEveryChoiceChooses()
    {
        int intoCluster = 0, intoNew = 0, waited = 0;
        for (uint64_t seed = 1; seed <= 40; ++seed) {
            const auto v = population(60, seed);
            ModelDemand d = demand();
            d.maxStages = int(2 + seed % 5);
            d.memoryBytes = int64_t(800 + 200 * (seed % 6)) * kMiB;
            std::vector<int> clusterOf(v.size(), -1);
            for (size_t i = 0; i < v.size(); ++i) {
                const auto expected = placedTheSlowWay(v, clusterOf, i, d);
                const Replan r = planJoin(v, clusterOf, i, d);
                QVERIFY2(r.clustering.clusterOf == expected,
                         qPrintable(QStringLiteral("seed %1, volunteer %2").arg(seed).arg(i)));
                const int k = std::max(0, *std::max_element(clusterOf.begin(), clusterOf.end()) + 1);
                (expected[i] == -1 ? waited : expected[i] >= k ? intoNew : intoCluster)++;
                clusterOf = r.clustering.clusterOf;
            }
        }
        // Every kind of choice was made, many times over.
        qInfo("%d into a cluster, %d into a new one, %d waited", intoCluster, intoNew, waited);
        QVERIFY2(intoCluster > 100 && intoNew > 100 && waited > 100,
                 qPrintable(QStringLiteral("%1 %2 %3").arg(intoCluster).arg(intoNew).arg(waited)));
    }

    void waitingVolunteersFormANewCluster()
    {
        std::vector<Capacity> v(4, Capacity{50, 1024 * kMiB, 50e6});
        std::vector<int> plan = {0, 0, -1, -1};
        v.push_back({50, 1024 * kMiB, 50e6});
        plan.push_back(-1);
        // Cluster 0 is full for this test's purposes: allow at most two stages.
        ModelDemand d = demand();
        d.maxStages = 2;
        const Replan r = planJoin(v, plan, 4, d);
        QCOMPARE(r.clustering.clusterCount(), 2);
        QCOMPARE(r.clustering.clusterOf[4], 1);
        QVERIFY(r.clustering.clusterFeasible[1]);
        QVERIFY(r.moved.empty());
    }
};

QTEST_APPLESS_MAIN(TestClusterFormation)
#include "tst_cluster_formation.moc"
