// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "engine/common/error.h"
#include "engine/model/model_zoo.h"
#include "engine/model/partitioner.h"
#include "engine/swarm/swarm_planner.h"

using namespace rookery;
using namespace rookery::swarm;

class TestSwarmPlanner : public QObject
{
    Q_OBJECT

    PlanModel mlp() const { return {model::mlpSpec(), 64, 1}; }

    std::vector<PlanVolunteer> volunteers(int n, double memoryFraction, double gflops = 50) const
    {
        const auto demand = demandOf(mlp());
        std::vector<PlanVolunteer> v;
        for (int i = 0; i < n; ++i)
            v.push_back(
                {"node-" + std::to_string(i), {gflops, int64_t(double(demand.memoryBytes) * memoryFraction), 100e6}});
        return v;
    }

private Q_SLOTS:
    void demandOfTheMlp()
    {
        const auto d = demandOf(mlp());
        // Parameters, gradients and momentum of 669,706 floats, stashed weight versions
        // in flight, and activations.
        QVERIFY(d.memoryBytes > 669706 * 4 * 3);
        QVERIFY(d.memoryBytes < 669706 * 4 * 8 + (16 << 20));
        // Forward 2 x 669k multiply-adds per sample; training 2-3 times that (no input gradient for the first layer).
        QVERIFY(d.trainFlopsPerSample > 2.2 * 2 * 669706 && d.trainFlopsPerSample < 3.2 * 2 * 669706);
        QCOMPARE(d.maxStages, 6);
    }

    void fourSmallMachinesMakeTwoClustersOfTwo()
    {
        const auto v = volunteers(4, 0.7);
        const SwarmPlan plan = planSwarm(mlp(), v, {3});
        QCOMPARE(plan.clustering.clusterCount(), 2);
        for (const auto &p : plan.pipelines) {
            QCOMPARE(p.stages.size(), size_t(2));
            QVERIFY(p.partition.fits());
        }
        // Both clusters are alike, so they cut alike: one ring per stage, one member per cluster.
        QCOMPARE(plan.pipelines[0].partition.cuts(), plan.pipelines[1].partition.cuts());
        QCOMPARE(plan.rings.size(), size_t(2));
        for (const auto &r : plan.rings)
            QCOMPARE(r.members.size(), size_t(2));
        QVERIFY(plan.predictedSamplesPerSecond > 0);
    }

    // The operator fixed the cluster size: the balancing after the search swaps members
    // but never moves one. Four alike volunteers on fast links (their measured uploads,
    // 42-143 MB/s), where moving one into the other cluster scores higher: without the
    // rule the plan was one cluster of one and one of three (a Flatten-only root among
    // them), where the operator asked for two and two.
    void aFixedClusterSizeIsKept()
    {
        const auto memory = int64_t(4e9);
        const std::vector<PlanVolunteer> v{{"node-0", {57.4377, memory, 1.06299e8}},
                                           {"node-1", {57.5007, memory, 7.36446e7}},
                                           {"node-2", {46.8249, memory, 4.19818e7}},
                                           {"node-3", {53.9973, memory, 1.43541e8}}};
        FormationOptions fixed{1};
        fixed.clusterSize = 2;
        const SwarmPlan plan = planSwarm(mlp(), v, fixed);
        QCOMPARE(plan.clustering.clusterCount(), 2);
        for (const auto &members : membersByCluster(plan.clustering.clusterOf))
            QCOMPARE(members.size(), size_t(2));
        for (const auto &p : plan.pipelines)
            QCOMPARE(p.stages.size(), size_t(2));
    }

    void differentCutsMakeMoreRings()
    {
        std::vector<PlanVolunteer> v = volunteers(4, 0.7);
        v[0].capacity.gflops = 200; // cluster of 0 and 1 cuts elsewhere than 2 and 3
        Clustering c =
            evaluate({v[0].capacity, v[1].capacity, v[2].capacity, v[3].capacity}, {0, 0, 1, 1}, demandOf(mlp()));
        const SwarmPlan plan = completePlan(mlp(), v, c);
        QVERIFY(plan.pipelines[0].partition.cuts() != plan.pipelines[1].partition.cuts());
        // Every layer with parameters is averaged by exactly one ring of two members.
        std::vector<int> covered(6, 0);
        for (const auto &r : plan.rings) {
            QCOMPARE(r.members.size(), size_t(2));
            for (size_t l = r.firstLayer; l < r.lastLayer; ++l)
                ++covered[l];
        }
        QCOMPARE(covered[1], 1);
        QCOMPARE(covered[3], 1);
        QCOMPARE(covered[5], 1);
    }

    void fasterMachineTakesTheHeavierPart()
    {
        std::vector<PlanVolunteer> v = volunteers(2, 0.7);
        v[1].capacity.gflops = 200;
        const PipelinePlan p = planPipeline(mlp(), v, {0, 1});
        const auto &stages = p.partition.stages;
        const size_t fastStage = p.stages[0] == 1 ? 0 : 1;
        // The fast machine gets the larger share of the work (FLOPs = seconds x GFLOP/s).
        QVERIFY(stages[fastStage].computeSeconds * 200 > stages[1 - fastStage].computeSeconds * 50);
    }

    // Two volunteers behind NAT and one reachable, all alike: the reachable one goes in
    // the middle, so that no pipeline link goes through the relay.
    void putsUnreachableVolunteersNextToReachableOnes()
    {
        std::vector<PlanVolunteer> v = volunteers(3, 0.7);
        v[0].capacity.reachable = false;
        v[1].capacity.reachable = false;
        for (double relay : {0.0, 1e6}) { // no relay cap: the tie-break; a slow relay: the cost
            PlanModel m = mlp();
            m.relayBytesPerSecond = relay;
            const PipelinePlan p = planPipeline(m, v, {0, 1, 2});
            QCOMPARE(p.stages.size(), size_t(3));
            QCOMPARE(p.stages[1], size_t(2));
        }
        // All reachable: the first order of the equally fast ones, as before.
        v[0].capacity.reachable = v[1].capacity.reachable = true;
        QCOMPARE(planPipeline(mlp(), v, {0, 1, 2}).stages, (std::vector<size_t>{0, 1, 2}));
    }

    // A relayed link is charged the relay's bandwidth: two unreachable volunteers that
    // must be neighbours make a slower pipeline than two reachable ones.
    void chargesARelayedLinkTheRelaysBandwidth()
    {
        std::vector<PlanVolunteer> v = volunteers(2, 0.7);
        PlanModel m = mlp();
        m.relayBytesPerSecond = 1e6; // 1 MB/s against the volunteers' own 100 MB/s
        const double direct = planPipeline(m, v, {0, 1}).samplesPerSecond;
        v[0].capacity.reachable = v[1].capacity.reachable = false;
        const double relayed = planPipeline(m, v, {0, 1}).samplesPerSecond;
        QVERIFY2(relayed < direct * 0.5, qPrintable(QString("%1 vs %2").arg(relayed).arg(direct)));
        m.relayBytesPerSecond = 0; // uncapped: no charge
        QCOMPARE(planPipeline(m, v, {0, 1}).samplesPerSecond, direct);
    }

    // Measured links stand for the volunteers' own figures on the links they describe:
    // a slow link between two volunteers keeps them apart, and a fast one lifts a
    // pipeline whose registered uploads were low.
    void measuredLinksChooseTheNeighbours()
    {
        std::vector<PlanVolunteer> v = volunteers(3, 0.7);
        QCOMPARE(planPipeline(mlp(), v, {0, 1, 2}).stages, (std::vector<size_t>{0, 1, 2})); // alike: the first order
        v[0].uploadTo["node-1"] = 1e5; // 100 kB/s between node-0 and node-1, both ways
        v[1].uploadTo["node-0"] = 1e5;
        v[0].uploadTo["node-2"] = 100e6; // as registered: no reason to prefer another
        const PipelinePlan apart = planPipeline(mlp(), v, {0, 1, 2});
        QCOMPARE(apart.stages, (std::vector<size_t>{0, 2, 1}));

        std::vector<PlanVolunteer> w = volunteers(2, 0.7);
        w[0].capacity.bandwidthBytesPerSecond = w[1].capacity.bandwidthBytesPerSecond = 1e5;
        const double registered = planPipeline(mlp(), w, {0, 1}).samplesPerSecond;
        w[0].uploadTo["node-1"] = 100e6;
        w[1].uploadTo["node-0"] = 100e6;
        const double measured = planPipeline(mlp(), w, {0, 1}).samplesPerSecond;
        QVERIFY2(measured > 10 * registered, qPrintable(QString("%1 vs %2").arg(measured).arg(registered)));
    }

    void keepsUnchangedPipelines()
    {
        const auto v = volunteers(4, 0.7);
        const SwarmPlan first = planSwarm(mlp(), v, {3});
        const SwarmPlan again = completePlan(mlp(), v, first.clustering, &first, {1});
        QCOMPARE(again.pipelines[0].stages, first.pipelines[0].stages);
        QCOMPARE(again.pipelines[0].partition.cuts(), first.pipelines[0].partition.cuts());
    }

    // planPipeline skips orders that only swap members alike; over clusters of up to six
    // drawn from few kinds of machine (so many are alike) it chooses the order, the cut
    // and the speed that trying every permutation, from the smallest ids, chooses.
    void skippingSwapsOfAlikeMembersChoosesWhatEveryOrderChooses()
    {
        const PlanModel m = mlp();
        const auto costs = model::layerCosts(m.spec, m.microbatch);
        const auto options = model::partitionOptionsFor(m.spec, m.microbatch, m.optimizerStateCopies);
        const int64_t demand = demandOf(m).memoryBytes;
        uint64_t state = 11;
        const auto next = [&] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
        int compared = 0, refused = 0;
        for (int trial = 0; trial < 120; ++trial) {
            const size_t n = 2 + size_t(trial % 5);
            std::vector<PlanVolunteer> v;
            for (size_t i = 0; i < n; ++i)
                v.push_back({"n" + std::to_string(i),
                             {next() % 2 ? 20.0 : 90.0, int64_t(double(demand) * (next() % 2 ? 0.35 : 0.7)),
                              next() % 3 ? 50e6 : 5e6, next() % 4 != 0}});
            std::vector<size_t> members(n);
            std::iota(members.begin(), members.end(), size_t(0));
            // Every permutation, as the search did before it skipped any.
            std::vector<size_t> bestOrder;
            double bestSeconds = std::numeric_limits<double>::infinity();
            size_t bestRelayed = 0;
            std::vector<size_t> perm = members;
            do {
                std::vector<model::StageDevice> devices;
                size_t relayed = 0;
                for (size_t s = 0; s < n; ++s) {
                    devices.push_back({v[perm[s]].id, v[perm[s]].capacity.gflops,
                                       uint64_t(v[perm[s]].capacity.memoryBytes),
                                       v[perm[s]].capacity.bandwidthBytesPerSecond});
                    relayed += s + 1 < n && !v[perm[s]].capacity.reachable && !v[perm[s + 1]].capacity.reachable;
                }
                const auto p = model::tryPartitionLayers(costs, devices, options);
                if (!p)
                    continue;
                const double seconds = p->bottleneckSeconds();
                if (seconds < bestSeconds * (1 - 1e-9) ||
                    (seconds <= bestSeconds * (1 + 1e-9) && relayed < bestRelayed)) {
                    bestSeconds = seconds;
                    bestRelayed = relayed;
                    bestOrder = perm;
                }
            } while (std::next_permutation(perm.begin(), perm.end()));
            if (bestOrder.empty()) {
                QVERIFY_THROWS_EXCEPTION(Error, planPipeline(m, v, members));
                ++refused;
                continue;
            }
            const PipelinePlan p = planPipeline(m, v, members);
            QCOMPARE(p.stages, bestOrder);
            QCOMPARE(p.samplesPerSecond, double(m.microbatch) / bestSeconds);
            ++compared;
        }
        QVERIFY2(compared > 50 && refused > 5, qPrintable(QStringLiteral("%1 %2").arg(compared).arg(refused)));
    }

    void refusesTooLittleMemory() { QVERIFY_THROWS_EXCEPTION(Error, planSwarm(mlp(), volunteers(2, 0.2))); }
};

QTEST_APPLESS_MAIN(TestSwarmPlanner)
#include "tst_swarm_planner.moc"
