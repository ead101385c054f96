// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/common/error.h"
#include "engine/coord/job_file.h"
#include "engine/coord/plan_state.h"
#include "engine/model/model_zoo.h"
#include "engine/sim/event_queue.h"
#include "engine/sim/population.h"
#include "engine/sim/sim_job.h"
#include "engine/sim/simulator.h"
#include "engine/sim/sweep.h"
#include "engine/sim/timing.h"
#include "engine/swarm/replan.h"
#include "engine/swarm/swarm_planner.h"

using namespace rookery;
using namespace rookery::sim;

// The MLP cut after layer 2 over two volunteers of 50 GFLOP/s that upload at
// `uploadBytesPerSecond` (and download at 1 GB/s), as the partitioner plans it.
struct TwoMlpStages
{
    std::vector<model::LayerCost> costs;
    model::PartitionOptions options;
    model::Partition partition;
    Volunteer a, b;

    explicit TwoMlpStages(double uploadBytesPerSecond)
    {
        const auto spec = model::mlpSpec();
        costs = model::layerCosts(spec, 64);
        options = model::partitionOptionsFor(spec, 64);
        for (Volunteer *v : {&a, &b}) {
            v->gflops = 50;
            v->upBytesPerSecond = uploadBytesPerSecond;
            v->downBytesPerSecond = 1e9;
        }
        const std::vector<model::StageDevice> devices{{"a", 50, uint64_t(1) << 30, uploadBytesPerSecond},
                                                      {"b", 50, uint64_t(1) << 30, uploadBytesPerSecond}};
        partition = model::evaluateCut(costs, devices, options, {2});
    }
};

class TestSim : public QObject
{
    Q_OBJECT

    // Always-online volunteers with speeds 30, 40, 50, ...; one network region.
    static Population steady(int n)
    {
        Population p;
        for (int i = 0; i < n; ++i) {
            Volunteer v;
            v.gflops = 30 + 10 * i;
            v.memoryBytes = int64_t(2) << 30;
            v.upBytesPerSecond = 5e6 + 1e6 * i;
            v.downBytesPerSecond = 50e6;
            v.sessions = {{0, 1e9}};
            p.volunteers.push_back(v);
        }
        return p;
    }

    static SimConfig config(double hours, int clusterSize)
    {
        SimConfig c;
        c.hours = hours;
        c.clusterSize = clusterSize;
        c.seed = 7;
        c.bucketSeconds = 60;
        return c;
    }

    // The planner's volunteers as the simulator registers them: ids "v<i>", capacity
    // from the profile (compute, memory) and the upload.
    static std::vector<swarm::PlanVolunteer> planVolunteers(const Population &p)
    {
        std::vector<swarm::PlanVolunteer> v;
        for (size_t i = 0; i < p.volunteers.size(); ++i) {
            const auto &x = p.volunteers[i];
            v.push_back({Simulator::nodeId(i), {x.gflops, x.memoryBytes, x.upBytesPerSecond, {}}});
        }
        return v;
    }

private Q_SLOTS:
    // A sweep runs the simulator once per setting, on the same population: each point
    // is what a plain run of that setting gives, and averaging less often sends fewer
    // bytes across clusters.
    void aSweepIsThePlainRunOfEachSetting()
    {
        const Population p = steady(8);
        const SimConfig base = config(0.05, 2);
        const SweepAxes axes{{1, 2}, {10, 100}};
        std::vector<double> progress;
        const SweepResult sweep = runSweep(p, base, axes, [&](double f) { progress.push_back(f); });
        QCOMPARE(sweep.points.size(), size_t(4));
        QVERIFY(!progress.empty());
        QVERIFY(std::is_sorted(progress.begin(), progress.end()));
        QCOMPARE(progress.back(), 1.0);
        size_t i = 0;
        for (int size : axes.clusterSizes)
            for (int interval : axes.averagingIntervals) {
                const auto &point = sweep.points[i++];
                QCOMPARE(point.clusterSize, size);
                QCOMPARE(point.averagingInterval, interval);
                SimConfig c = base;
                c.clusterSize = size;
                c.averagingInterval = interval;
                Simulator plain(p, c);
                const SimResult r = plain.run();
                QCOMPARE(point.samplesPerSecond, r.samples / r.simulatedSeconds);
                QVERIFY(point.samplesPerSecond > 0);
            }
        // Clusters of two average across 4 clusters: every 100 steps costs less a sample
        // than every 10. (Clusters of one hold the whole model: 8 members.)
        QVERIFY(sweep.points[3].bytesAcrossPerSample < sweep.points[2].bytesAcrossPerSample);
        QVERIFY(sweep.points[1].bytesAcrossPerSample < sweep.points[0].bytesAcrossPerSample);
        QCOMPARE(sweep.best, recommend(sweep.points, sweep.tolerance));
    }

    // The recommendation: the smallest interval, then cluster size, within the
    // tolerance of the best samples/s.
    void theRecommendationAveragesMostOftenAmongNearEquals()
    {
        std::vector<SweepPoint> points(4);
        points[0] = {1, 10, 800};
        points[1] = {1, 100, 1000};
        points[2] = {4, 10, 970};
        points[3] = {2, 10, 960};
        QCOMPARE(recommend(points, 0.05), size_t(3)); // 960 and 970 within 5% of 1,000; size 2 < 4
        QCOMPARE(recommend(points, 0.01), size_t(1)); // only 1,000 itself
        QCOMPARE(recommend(points, 0.25), size_t(0)); // 800 too: interval 10, size 1
        QVERIFY_THROWS_EXCEPTION(Error, recommend({}, 0.05));
    }

    void sweepListsAreCheckedAndNamed()
    {
        QCOMPARE(parseIntList("1,2,4", "--x", 0, 64), (std::vector<int>{1, 2, 4}));
        QCOMPARE(parseIntList("7", "--x", 0, 64), (std::vector<int>{7}));
        for (const char *bad : {"", "1,,2", "1,a", "1.5", "65", "-1", "2,"}) {
            try {
                parseIntList(bad, "--sweep-cluster-sizes", 0, 64);
                QFAIL(bad);
            } catch (const Error &e) {
                QVERIFY2(std::string(e.what()).find("--sweep-cluster-sizes") != std::string::npos, e.what());
            }
        }
        QVERIFY_THROWS_EXCEPTION(Error, runSweep(steady(2), config(0.01, 1), SweepAxes{{}, {10}}));
        QVERIFY_THROWS_EXCEPTION(Error, runSweep(steady(2), config(0.01, 1), SweepAxes{{1}, {0}}));
    }

    void aOneRegionPopulationKeepsTheSameVolunteers()
    {
        GeneratorOptions o;
        o.volunteers = 50;
        o.hours = 2;
        const Population regions = generatePopulation(o);
        o.rttSeconds = 0.001;
        const Population lan = generatePopulation(o);
        QCOMPARE(regions.network.regions.size(), size_t(4));
        QCOMPARE(lan.network.regions.size(), size_t(1));
        QCOMPARE(lan.network.rttSeconds, std::vector<std::vector<double>>{{0.001}});
        bool spread = false;
        for (size_t i = 0; i < lan.volunteers.size(); ++i) {
            const Volunteer &a = regions.volunteers[i], &b = lan.volunteers[i];
            QCOMPARE(b.region, 0);
            spread = spread || a.region != 0;
            QCOMPARE(b.gflops, a.gflops);
            QCOMPARE(b.upBytesPerSecond, a.upBytesPerSecond);
            QCOMPARE(b.relayed, a.relayed);
            QCOMPARE(b.sessions.size(), a.sessions.size());
            QCOMPARE(b.departsAt, a.departsAt);
        }
        QVERIFY(spread); // the default population does use the other regions
        QCOMPARE(linkRttSeconds(lan.volunteers[0], lan.volunteers[1], lan.network),
                 0.001 + ((lan.volunteers[0].relayed || lan.volunteers[1].relayed) ? lan.network.relayExtraRttSeconds
                                                                                   : 0.0));
    }

    void eventsComeInTimeOrderAndTiesInInsertionOrder()
    {
        EventQueue q;
        q.push(2, 0, 1);
        q.push(1, 0, 2);
        q.push(2, 0, 3);
        QCOMPARE(q.pop().subject, 2);
        QCOMPARE(q.pop().subject, 1);
        QCOMPARE(q.pop().subject, 3);
        QCOMPARE(q.now(), 2.0);
    }

    void twoStagesWithKnownTimesGiveTheExactThroughput()
    {
        // Stages of 10 ms and 20 ms, links of 5 ms RTT: the slowest stage binds with a
        // window of 3 (round trip 35 ms, 3 / 35 ms > 1 / 20 ms) ...
        QCOMPARE(pipelineMicrobatchesPerSecond({0.010, 0.020}, 0.005, 3), 50.0);
        // ... and the window with one microbatch in flight: 1 / 35 ms.
        QCOMPARE(pipelineMicrobatchesPerSecond({0.010, 0.020}, 0.005, 1), 1 / 0.035);
    }

    void pipelineTimesComeFromTheCostModelAndTheLinks()
    {
        const TwoMlpStages m(1e6);
        const auto &[costs, options, partition, a, b] = m;
        Network net;
        const auto t = timePipeline(costs, options, partition, {&a, &b}, net);
        // With links as slow as each uploader, the stage times are the partitioner's.
        QCOMPARE(t.stageSeconds[0], partition.stages[0].seconds);
        QCOMPARE(t.stageSeconds[1], partition.stages[1].seconds);
        // Both stages upload as slowly: the trip covers about two bottlenecks, so the
        // root's rule keeps its floor of stages + 1.
        QCOMPARE(t.window, 3);
        QCOMPARE(t.microbatchesPerSecond,
                 pipelineMicrobatchesPerSecond(t.stageSeconds, net.rttSeconds[0][0], t.window));
    }

    // Nodes send activations and gradients as bf16 by default: half the float32 bytes
    // the cost model counts; the labels stay int64.
    void activationsTakeTheBytesOfThePeersPrecision()
    {
        const TwoMlpStages m(1e6);
        const auto &[costs, options, partition, a, b] = m;
        Network net;
        const auto full = timePipeline(costs, options, partition, {&a, &b}, net, train::kDefaultMaxWindow, 4);
        const auto half = timePipeline(costs, options, partition, {&a, &b}, net, train::kDefaultMaxWindow, 2);
        QCOMPARE(full.bytesPerMicrobatch, 2 * 131072 + 512.0); // activations and label forward, gradient back
        QCOMPARE(half.bytesPerMicrobatch, 2 * 65536 + 512.0);
        // At 1 MB/s the uploads bind both stages: the root sends the activations and label.
        QCOMPARE(full.stageSeconds[0], (131072 + 512) / 1e6);
        QCOMPARE(half.stageSeconds[0], (65536 + 512) / 1e6);
        QCOMPARE(half.stageSeconds[1], 65536 / 1e6);
        QVERIFY(half.microbatchesPerSecond > 1.9 * full.microbatchesPerSecond);
        QVERIFY_THROWS_EXCEPTION(Error, timePipeline(costs, options, partition, {&a, &b}, net, 5, 0));
        QVERIFY_THROWS_EXCEPTION(Error, timePipeline(costs, options, partition, {&a, &b}, net, 5, 8));
    }

    void theTransportsCpuIsChargedToEachEndOfAMessage()
    {
        const TwoMlpStages m(1e12); // links so fast that compute binds each stage
        const auto &[costs, options, partition, a, b] = m;
        Network free, costly;
        costly.transportFlopsPerMessage = 1e6;
        costly.transportFlopsPerByte = 10;
        const auto before = timePipeline(costs, options, partition, {&a, &b}, free);
        const auto after = timePipeline(costs, options, partition, {&a, &b}, costly);
        // Each stage has two messages: the root sends activations with the labels and
        // gets their gradient back; the leaf gets the activations and labels and sends
        // the gradient (the root trains something). Both at 50 GFLOP/s.
        const size_t cut = partition.stages[0].lastLayer;
        const double activation = double(costs[cut - 1].activationBytes), labels = double(options.labelBytes);
        QVERIFY(activation > 0 && labels > 0);
        const double expected = (2 * 1e6 + 10 * (2 * activation + labels)) / 50e9;
        for (int s : {0, 1}) {
            QCOMPARE(before.transportSeconds[size_t(s)], 0.0);
            QCOMPARE(after.transportSeconds[size_t(s)], expected);
            QCOMPARE(after.stageSeconds[size_t(s)], before.stageSeconds[size_t(s)] + expected);
        }
        QCOMPARE(after.bytesPerMicrobatch, before.bytesPerMicrobatch); // the wire carries the same
        QVERIFY(after.microbatchesPerSecond < before.microbatchesPerSecond);

        // A ring of four, 8 MB each: 6 chunks out and 6 in, 12 MB each way.
        QCOMPARE(ringTransportSeconds(costly, 4, 8e6, 50), (12 * 1e6 + 10 * 24e6) / 50e9);
        QCOMPARE(ringTransportSeconds(costly, 1, 8e6, 50), 0.0);
        QCOMPARE(ringTransportSeconds(free, 4, 8e6, 50), 0.0);

        // A population file carries both figures; a negative one is refused by name.
        const std::string volunteer =
            R"("volunteers": [{"gflops": 50, "memory_gib": 4, "up_mbit": 20, "down_mbit": 100}])";
        const Population p = populationFromJson(R"({"transport_flops_per_message": 1000000,
                                                    "transport_flops_per_byte": 10, )" +
                                                volunteer + "}");
        QCOMPARE(p.network.transportFlopsPerMessage, 1e6);
        QCOMPARE(p.network.transportFlopsPerByte, 10.0);
        QCOMPARE(populationFromJson(toJson(p)).network.transportFlopsPerByte, 10.0);
        try {
            populationFromJson(R"({"transport_flops_per_byte": -1, )" + volunteer + "}");
            QFAIL("a negative transport cost was accepted");
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find("transport_flops_per_byte") != std::string::npos, e.what());
        }
    }

    void aRingMembersOwnWorkLengthensEachRound()
    {
        // Two equal volunteers in clusters of one, averaging every 10 steps: a round's
        // own work of X FLOP per byte adds X * (the MLP's weights in bytes) / GFLOP/s to
        // every round, so to each sample 1/640 of that.
        Population p = steady(2);
        p.volunteers[1] = p.volunteers[0];
        SimConfig plain = config(0.01, 1), costly = plain;
        costly.ringFlopsPerByte = 50;
        const SimResult a = Simulator(p, plain).run(), b = Simulator(p, costly).run();
        QCOMPARE(a.clusters.size(), size_t(2));
        QCOMPARE(b.clusters.size(), size_t(2));
        double bytes = 0;
        for (const auto &c : model::layerCosts(model::mlpSpec(), 64))
            bytes += double(c.parameters) * 4;
        const double perRound = 50 * bytes / (p.volunteers[0].gflops * 1e9);
        for (size_t i = 0; i < 2; ++i) {
            const double samplesPerRound = 64.0 * 10;
            QCOMPARE(samplesPerRound / b.clusters[i].samplesPerSecond,
                     samplesPerRound / a.clusters[i].samplesPerSecond + perRound);
        }
        costly.ringFlopsPerByte = -1;
        QVERIFY_THROWS_EXCEPTION(Error, Simulator(p, costly).run());
    }

    // Ring chunks take the bytes of their precision, as the nodes send them: bf16 half of
    // float32's, int4 a little over an eighth; and a round over a slow link is shorter
    // by as much.
    void ringChunksTakeTheBytesOfTheirPrecision()
    {
        Population p = steady(2);
        p.volunteers[1] = p.volunteers[0];
        SimConfig c = config(0.01, 1);
        std::map<ValuePrecision, SimResult> r;
        for (const auto precision : {ValuePrecision::Float32, ValuePrecision::Bf16, ValuePrecision::Int4}) {
            c.ringPrecision = precision;
            r[precision] = Simulator(p, c).run();
            QVERIFY(r[precision].bytesAcrossClusters > 0);
        }
        const auto perSample = [&](ValuePrecision x) { return r[x].bytesAcrossClusters / r[x].samples; };
        const auto rate = [&](ValuePrecision x) { return r[x].samples / r[x].simulatedSeconds; };
        QVERIFY(std::abs(perSample(ValuePrecision::Bf16) / perSample(ValuePrecision::Float32) - 0.5) < 1e-6);
        QVERIFY(std::abs(perSample(ValuePrecision::Int4) / perSample(ValuePrecision::Float32) - (0.5 + 1.0 / 64) / 4) <
                1e-3);
        QVERIFY(rate(ValuePrecision::Int4) > rate(ValuePrecision::Bf16));
        QVERIFY(rate(ValuePrecision::Bf16) > rate(ValuePrecision::Float32));
    }

    void theWindowGrowsWithTheRoundTripAsTheRootsDoes()
    {
        TwoMlpStages m(1e9);
        m.b.region = 1;
        const auto &[costs, options, partition, a, b] = m;
        for (const double rtt : {0.0, 0.002, 0.05}) {
            Network net;
            net.regions = {"near", "far"};
            net.rttSeconds = {{0, rtt}, {rtt, 0}};
            const auto t = timePipeline(costs, options, partition, {&a, &b}, net);
            const double slowest = std::max(t.stageSeconds[0], t.stageSeconds[1]);
            // The uploads overlap compute, so a stage takes the slower of the two, but a
            // microbatch's trip holds both.
            const double trip = rtt + t.computeSeconds[0] + t.computeSeconds[1] + (2 * 131072 + 512) / 1e9;
            QCOMPARE(t.latencySeconds, trip);
            QCOMPARE(t.stageSeconds[0], std::max(t.computeSeconds[0], (131072 + 512) / 1e9));
            // ceil(trip / slowest), from stages + 1 up to the node's cap of 5.
            const int expected = std::clamp(int(std::ceil(trip / slowest - 1e-9)), 3, 5);
            QCOMPARE(t.window, expected);
            QCOMPARE(t.microbatchesPerSecond, std::min(1 / slowest, expected / trip));
        }
        // At 50 ms the trip is many stage times: the cap.
        Network far;
        far.regions = {"near", "far"};
        far.rttSeconds = {{0, 0.05}, {0.05, 0}};
        QCOMPARE(timePipeline(costs, options, partition, {&a, &b}, far).window, 5);
        QCOMPARE(timePipeline(costs, options, partition, {&a, &b}, far, 8).window, 8);
    }

    void aRingOfKnownBandwidthGivesTheExactAveragingTime()
    {
        // Four members, 8 MB each, 1 MB/s: 2 x 3 steps of 2 MB = 12 s, plus 6 half RTTs.
        QCOMPARE(ringAllReduceSeconds(4, 8e6, 1e6, 0), 12.0);
        QCOMPARE(ringAllReduceSeconds(4, 8e6, 1e6, 0.1), 12.3);
        QCOMPARE(ringBytesPerMember(4, 8e6), 12e6);
        QCOMPARE(ringAllReduceSeconds(1, 8e6, 1e6, 0.1), 0.0);
    }

    void theSimulatorMakesThePlannersPlan()
    {
        const Population p = steady(8);
        Simulator sim(p, config(0.01, 2));
        sim.run();
        swarm::FormationOptions o;
        o.seed = 7;
        o.clusterSize = 2;
        const swarm::PlanModel m{model::mlpSpec(), 64, 1};
        const auto direct = swarm::planSwarm(m, planVolunteers(p), o);
        const auto &simulated = sim.planState(0).plan();
        QCOMPARE(simulated.clustering.clusterOf, direct.clustering.clusterOf);
        QCOMPARE(simulated.pipelines.size(), direct.pipelines.size());
        for (size_t c = 0; c < direct.pipelines.size(); ++c) {
            QCOMPARE(simulated.pipelines[c].stages, direct.pipelines[c].stages);
            QCOMPARE(simulated.pipelines[c].partition.cuts(), direct.pipelines[c].partition.cuts());
        }
    }

    // A job file's model and settings are what the simulator plans, as the coordinator
    // would plan that job.
    void aJobIsPlannedAsTheCoordinatorPlansIt()
    {
        const coord::Job job = coord::parseJob(
            R"({"rookery_job": 1, "name": "wide", "steps": 1000, "seed": 11, "microbatch": 32, "accumulation": 2,
                "max_window": 3, "optimizer": {"kind": "adamw", "lr": 0.001},
                "averaging": {"interval": 50, "overlap": true},
                "model": {"name": "wide-mlp", "input": [1, 28, 28], "classes": 10, "layers": [
                    {"type": "flatten"}, {"type": "linear", "in": 784, "out": 1024}, {"type": "relu"},
                    {"type": "linear", "in": 1024, "out": 10}]}})",
            "wide.json");
        SimConfig c = config(0.01, 2);
        const auto notes = applyJob(c, job.run);
        QCOMPARE(notes.size(), size_t(1)); // the overlap, which is not modelled
        QVERIFY(notes[0].find("overlap_averaging") != std::string::npos);
        QCOMPARE(c.model, std::string("wide-mlp"));
        QCOMPARE(c.modelSpec, job.run.model);
        QCOMPARE(c.microbatch, int64_t(32));
        QCOMPARE(c.averagingInterval, 100); // 50 optimizer steps of 2 microbatches
        QCOMPARE(c.maxWindow, 3);
        QCOMPARE(c.seed, uint64_t(11));
        QCOMPARE(c.optimizerStateCopies, 2.0); // AdamW's two moments

        const Population p = steady(8);
        Simulator sim(p, c);
        sim.run();
        QCOMPARE(sim.planState(0).model().spec, job.run.model);
        swarm::FormationOptions o;
        o.seed = 11;
        o.clusterSize = 2;
        const swarm::PlanModel m{job.run.model, 32, 2};
        const auto direct = swarm::planSwarm(m, planVolunteers(p), o);
        const auto &simulated = sim.planState(0).plan();
        QCOMPARE(simulated.clustering.clusterOf, direct.clustering.clusterOf);
        QCOMPARE(simulated.pipelines.size(), direct.pipelines.size());
        for (size_t i = 0; i < direct.pipelines.size(); ++i)
            QCOMPARE(simulated.pipelines[i].partition.cuts(), direct.pipelines[i].partition.cuts());

        // No overlap, no note; an interval past what the simulator counts is refused.
        coord::RunConfig plain = job.run;
        plain.overlapAveraging = false;
        QVERIFY(applyJob(c, plain).empty());
        plain.averagingInterval = 1'000'000;
        plain.accumulation = 4096;
        QVERIFY_THROWS_EXCEPTION(Error, applyJob(c, plain));
    }

    // Over a 50 ms round trip the root's window is what covers the trip, up to the cap,
    // and a latency-bound pipeline trains in proportion to it: a job's cap of 3 against
    // the nodes' default of 5.
    void theJobsWindowCapHoldsTheSimulatedPipeline()
    {
        Population p = steady(2);
        p.network.rttSeconds = {{0.05}};
        for (auto &v : p.volunteers)
            v.upBytesPerSecond = v.downBytesPerSecond = 1e9;
        SimConfig c = config(0.01, 2);
        const SimResult capped = [&] {
            SimConfig k = c;
            k.maxWindow = 3;
            return Simulator(p, k).run();
        }();
        const SimResult byDefault = Simulator(p, c).run();
        QCOMPARE(capped.clusters.size(), size_t(1));
        QCOMPARE(byDefault.clusters.size(), size_t(1));
        QCOMPARE(Simulator(p, c).config().maxWindow, train::kDefaultMaxWindow);
        QVERIFY(byDefault.clusters[0].samplesPerSecond > 0);
        QCOMPARE(capped.clusters[0].samplesPerSecond / byDefault.clusters[0].samplesPerSecond, 3.0 / 5.0);
        SimConfig bad = c;
        bad.maxWindow = -1;
        QVERIFY_THROWS_EXCEPTION(Error, (void)Simulator(p, bad));
    }

    void aNodeLeavingIsReplannedAfterTheGrace()
    {
        Population p = steady(8);
        p.volunteers[5].sessions = {{0, 100}}; // silent from 100 s on
        SimConfig c = config(0.1, 2);
        c.rejoinGraceSeconds = 15; // the coordinator's default is minutes, longer than this run
        Simulator sim(p, c);
        const SimResult r = sim.run();
        // The first plan at 3 s; the leave when timeout (5 s) and grace (15 s) have passed.
        QCOMPARE(r.replanTimes.size(), size_t(2));
        QCOMPARE(r.replanTimes[0], 3.0);
        QCOMPARE(r.replanTimes[1], 120.0);
        QCOMPARE(r.leaves, int64_t(1));

        // The planner, called directly: the same first plan, then planLeave for node 5.
        swarm::FormationOptions o;
        o.seed = 7;
        o.clusterSize = 2;
        const swarm::PlanModel m{model::mlpSpec(), 64, 1};
        const auto volunteers = planVolunteers(p);
        const auto first = swarm::planSwarm(m, volunteers, o);
        std::vector<swarm::Capacity> caps;
        for (const auto &v : volunteers)
            caps.push_back(v.capacity);
        const auto leave = swarm::planLeave(caps, first.clustering.clusterOf, 5, swarm::demandOf(m));
        auto expected = leave.clustering.clusterOf;
        expected.erase(expected.begin() + 5); // the coordinator forgets the node
        const auto &state = sim.planState(0);
        QCOMPARE(state.size(), size_t(7));
        QVERIFY(!state.contains(Simulator::nodeId(5)));
        QCOMPARE(state.plan().clustering.clusterOf, expected);
        // And the same as the coordinator's plan state given the same changes.
        coord::PlanState real(m, o);
        std::vector<std::pair<std::string, swarm::Capacity>> joins;
        for (const auto &v : volunteers)
            joins.push_back({v.id, v.capacity});
        real.apply({}, joins);
        real.planAll();
        real.apply({Simulator::nodeId(5)}, {});
        QCOMPARE(state.placements(), real.placements());
    }

    void churnIsCountedAndTheRunIsDeterministic()
    {
        GeneratorOptions g;
        g.volunteers = 60;
        g.hours = 2;
        g.sessionMeanHours = 0.5;
        g.offMeanHours = 0.3;
        const Population p = generatePopulation(g);
        QCOMPARE(toJson(populationFromJson(toJson(p))), toJson(p));
        const SimResult a = Simulator(p, config(2, 3)).run();
        const SimResult b = Simulator(p, config(2, 3)).run();
        QVERIFY(a.samples > 0);
        QVERIFY(a.leaves > 0);
        QVERIFY(a.replans > 1);
        QCOMPARE(a.samples, b.samples);
        QCOMPARE(a.layersMoved, b.layersMoved);
        QCOMPARE(a.series.size(), size_t(120));
        for (double u : a.utilisation)
            QVERIFY(u >= 0 && u <= 1.0 + 1e-9);
    }
};

QTEST_APPLESS_MAIN(TestSim)
#include "tst_sim.moc"
