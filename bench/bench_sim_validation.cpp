// SPDX-License-Identifier: GPL-3.0-or-later
// bench_sim_validation: does rookery-sim predict real swarms? Real MLP swarms of node
// processes on loopback (rookery-local-swarm's launcher) against the simulator's
// prediction for the same volunteers and settings (issue 19):
//   1x2  one cluster of two stages;
//   2x1  two clusters of one stage, averaging every 10 steps (a ring and nothing else);
//   2x2  two clusters of two stages, averaging every 10 steps;
//   4x1  four clusters of one stage, averaging every 10 steps;
//   1x2 with node 2 capped at half its CPU (--cpu-percent 50);
//   1x2 behind the WAN emulation: 50 ms round trip, 50 Mbit/s links.
// Each line prints real and predicted samples/s and the error; key `max_error` is the
// worst of the six.
//
// What the simulator is told: each volunteer's compute in GFLOP/s, one number. The cost
// model's FLOPs are not what the MLP costs on this CPU (small layers, framework
// overhead), and on one machine the node processes share its cores, so calibration
// runs come first: n clusters of one stage that never average (no links, only n
// processes training at once; n = 1, 2, 4) give what one process trains beside n - 1
// others, turned into the GFLOP/s at which the simulator's lone stage trains as fast.
// Each case's volunteers get the figure for its number of processes, times their CPU
// cap. The links come from bench_transport, run first in this run: its TLS link's
// rate and its small message's round trip on loopback (or the WAN emulation's
// 50 Mbit/s and 50 ms), and what a message and a byte cost in CPU at each end (half of
// its both-ends figures), turned into FLOP-equivalents at the lone process's GFLOP/s so
// that they slow down with the compute when processes share the cores; and a ring
// member's own work per byte of weights in a round, timed on an in-memory ring of two
// threads, turned the same way. Nothing is fitted to the cases themselves.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench/support/bench_report.h"
#include "bench/support/swarm_bench_run.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/named_tensor.h"
#include "engine/device/process_usage.h"
#include "engine/sim/simulator.h"
#include "engine/swarm/ring_allreduce.h"
#include "engine/swarm/ring_averaging.h"

using namespace rookery;

namespace {

// What bench_transport measured of our TLS link on loopback, in this run.
struct LinkFigures
{
    double bytesPerSecond = 0;
    double rttSeconds = 0;
    double cpuSecondsPerMessage = 0; ///< at each end
    double cpuSecondsPerByte = 0;    ///< at each end
};

LinkFigures measureLink(const std::filesystem::path &work)
{
    const auto program = std::filesystem::canonical("/proc/self/exe").parent_path() / "bench_transport";
    const auto json = work.string() + "-transport.json";
    const std::string command = "'" + program.string() + "' --quick --json '" + json + "' > /dev/null";
    std::printf("  measuring the link: %s\n", command.c_str());
    std::fflush(stdout);
    if (std::system(command.c_str()) != 0)
        throw Error("bench_transport failed (" + command + ")");
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    std::filesystem::remove(json);
    if (j.is_discarded() || !j.contains("measured") || !j.contains("p50_us") || !j.contains("link_cpu_ns_per_byte") ||
        !j.contains("link_cpu_us_per_message"))
        throw Error("bench_transport wrote no usable figures to " + json);
    LinkFigures f;
    f.bytesPerSecond = j.at("measured").get<double>() * 1e9;
    f.rttSeconds = j.at("p50_us").get<double>() * 1e-6;
    f.cpuSecondsPerByte = j.at("link_cpu_ns_per_byte").get<double>() * 1e-9 / 2;
    f.cpuSecondsPerMessage = j.at("link_cpu_us_per_message").get<double>() * 1e-6 / 2;
    if (!(f.bytesPerSecond > 0) || !(f.rttSeconds > 0))
        throw Error("bench_transport measured no rate or round trip");
    return f;
}

struct Case
{
    std::string name;
    bench::SwarmBenchSpec spec;
    double cpuCapOfNode2 = 1; ///< 0.5: node 2 runs with --cpu-percent 50
};

// One direction of an in-memory ring of two: the members' own work in a round, with
// no network.
class MemoryLinks : public swarm::RingLinks
{
public:
    MemoryLinks *next = nullptr;
    void sendNext(swarm::RingChunk chunk) override
    {
        std::lock_guard lock(next->m_mutex);
        next->m_queue.push_back(std::move(chunk));
        next->m_arrived.notify_all();
    }
    std::optional<swarm::RingChunk> receivePrevious(std::chrono::steady_clock::time_point deadline) override
    {
        std::unique_lock lock(m_mutex);
        if (!m_arrived.wait_until(lock, deadline, [&] { return !m_queue.empty(); }))
            return std::nullopt;
        auto c = std::move(m_queue.front());
        m_queue.pop_front();
        return c;
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_arrived;
    std::deque<swarm::RingChunk> m_queue;
};

double threadCpuSeconds() { return std::chrono::duration<double>(device::threadCpuTime()).count(); }

// CPU seconds a member of a ring of two spends on its own per byte of weights in a
// round: the weights flattened, the ring's working copy, the chunks copied out and
// checked for plausibility as they come in, the sum and the average, and the result
// written back (swarm::flattenParameters, ringAllReduceAverage, unflattenParameters),
// with the nodes' allocator settings. Two threads, in-memory links. What it leaves out:
// the copies between LibTorch and the named tensors around a round.
double measureRingWorkPerByte(size_t floats)
{
    MemoryLinks a, b;
    a.next = &b;
    b.next = &a;
    constexpr int kRounds = 60;
    double cpu[2] = {0, 0};
    auto member = [&](int rank, MemoryLinks &links) {
        NamedTensor t{"1.weight", DType::Float32, {int64_t(floats)}, std::vector<uint8_t>(floats * sizeof(float))};
        for (size_t i = 0; i < floats; ++i) {
            const float v = 0.01f * float(i % 97) + 0.001f * float(rank);
            std::memcpy(t.data.data() + i * sizeof(float), &v, sizeof v);
        }
        std::vector<NamedTensor> weights{std::move(t)};
        for (int round = 1; round <= kRounds; ++round) {
            const double before = threadCpuSeconds();
            std::vector<float> flat = swarm::flattenParameters(weights);
            const auto r = swarm::ringAllReduceAverage(flat, rank, 2, uint64_t(round), links, std::chrono::seconds(20));
            if (!r.complete)
                throw Error("the in-memory ring failed: " + r.error);
            swarm::unflattenParameters(flat, weights);
            if (round > 10) // the first rounds warm the allocator up
                cpu[rank] += threadCpuSeconds() - before;
        }
    };
    std::exception_ptr failure;
    std::thread other([&] {
        try {
            member(1, b);
        } catch (...) {
            failure = std::current_exception();
        }
    });
    member(0, a);
    other.join();
    if (failure)
        std::rethrow_exception(failure);
    return (cpu[0] + cpu[1]) / 2 / (kRounds - 10) / double(floats * sizeof(float));
}

// The simulator's steady rate for the case: every volunteer online throughout, the
// plan made once, and the clusters' rates (averaging included) summed at the end.
// `loneGflops` converts the transport's CPU seconds into FLOP-equivalents.
double predict(const Case &c, const std::map<int, double> &gflopsByProcesses, const LinkFigures &link,
               double ringCpuSecondsPerByte, double loneGflops)
{
    sim::Population population;
    const bool wan = c.spec.rttMs > 0;
    population.network.regions = {"this machine"};
    population.network.rttSeconds = {{wan ? c.spec.rttMs / 1000.0 : link.rttSeconds}};
    population.network.transportFlopsPerMessage = link.cpuSecondsPerMessage * loneGflops * 1e9;
    population.network.transportFlopsPerByte = link.cpuSecondsPerByte * loneGflops * 1e9;
    const double hours = 0.05;
    const double gflops = gflopsByProcesses.at(c.spec.nodes);
    for (int i = 0; i < c.spec.nodes; ++i) {
        sim::Volunteer v;
        v.gflops = gflops * (i == 1 ? c.cpuCapOfNode2 : 1);
        v.upBytesPerSecond = v.downBytesPerSecond = wan ? c.spec.rateMbit * 1e6 / 8 : link.bytesPerSecond;
        v.sessions = {{0, hours * 3600}};
        population.volunteers.push_back(v);
    }
    sim::SimConfig config;
    config.clusterSize = c.spec.clusterSize;
    config.averagingInterval = int(c.spec.averagingInterval);
    config.ringPrecision = precisionFromName(c.spec.ringCompression);      // as the nodes were told
    config.peerCompression = net::compressionFromName(c.spec.compression); // as the nodes were told
    config.ringFlopsPerByte = ringCpuSecondsPerByte * loneGflops * 1e9;
    config.microbatch = bench::kSwarmBenchBatch;
    config.hours = hours;
    config.bucketSeconds = 60;
    sim::Simulator simulator(std::move(population), config);
    const sim::SimResult r = simulator.run();
    double rate = 0;
    for (const auto &cluster : r.clusters)
        rate += cluster.samplesPerSecond;
    return rate;
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_sim_validation",
        "Real MLP swarms on loopback (1x2, 2x1, 2x2, 4x1, a stage at half speed, 50 ms links) against rookery-sim's "
        "prediction.");
    try {
        bench::BenchReport report("bench_sim_validation", opts.quick);
        const int64_t steps = opts.quick ? 300 : 1500;
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        const auto work =
            std::filesystem::temp_directory_path() / ("rookery-bench-sim-validation-" + std::to_string(getpid()));
        std::printf("MLP, microbatch %lld, %lld steps per cluster, %u cores, every node --max-cores 1\n",
                    (long long)bench::kSwarmBenchBatch, (long long)steps, cores);

        auto spec = [](int nodes, int clusterSize) {
            bench::SwarmBenchSpec s;
            s.nodes = nodes;
            s.clusterSize = clusterSize;
            s.rateMbit = 0; // no emulation
            return s;
        };
        auto runReal = [&](const Case &c) {
            std::filesystem::remove_all(work);
            const auto o = bench::runSwarmBench(c.spec, steps, steps, work);
            std::filesystem::remove_all(work);
            return o.samplesPerSecond;
        };

        // Calibration: what one node process trains alone, when n of them train at once on
        // this machine (n clusters of one stage that never average: no links, only the
        // contention for cores, caches and memory), turned into the GFLOP/s at which the
        // simulator's lone stage trains as fast. The cases below then get the figure for
        // their own number of processes.
        const LinkFigures link = measureLink(work);
        std::printf("  link: %.2f GB/s, round trip %.1f us; CPU at each end %.1f us per message, %.2f ns per byte\n",
                    link.bytesPerSecond / 1e9, link.rttSeconds * 1e6, link.cpuSecondsPerMessage * 1e6,
                    link.cpuSecondsPerByte * 1e9);
        report.add("link_gbps", link.bytesPerSecond / 1e9);
        report.add("link_rtt_us", link.rttSeconds * 1e6);
        report.add("link_cpu_us_per_message_each_end", link.cpuSecondsPerMessage * 1e6);
        report.add("link_cpu_ns_per_byte_each_end", link.cpuSecondsPerByte * 1e9);
        device::keepFreedMemoryForReuse(); // as a node without a memory cap does
        const double ringWork = measureRingWorkPerByte(size_t(2.7e6 / sizeof(float)));
        std::printf("  a ring member's own work: %.2f ns of CPU per byte of weights per round\n", ringWork * 1e9);
        report.add("ring_cpu_ns_per_byte", ringWork * 1e9);
        const double unit = predict({"unit", spec(1, 1)}, std::map<int, double>{{1, 1.0}}, link, 0,
                                    0); // samples/s at 1 GFLOP/s
        if (!(unit > 0))
            throw Error("the simulator predicts nothing for one node of 1 GFLOP/s");
        std::map<int, double> gflops; // by processes at once
        for (const int n : {1, 2, 4}) {
            Case alone{std::to_string(n) + "x1_alone", spec(n, 1)};
            alone.spec.averagingInterval = steps * 10; // no round until the end
            const double perProcess = runReal(alone) / n;
            gflops[n] = perProcess / unit;
            std::printf("  calibration, %d at once: %s samples/s per process, so %.2f GFLOP/s each\n", n,
                        format::count(int64_t(perProcess)).c_str(), gflops[n]);
            report.add("calibration_" + std::to_string(n) + "_at_once_per_process", perProcess);
        }

        std::vector<Case> cases{{"1x2", spec(2, 2)}, {"2x1", spec(2, 1)}, {"2x2", spec(4, 2)}, {"4x1", spec(4, 1)}};
        Case capped{"1x2_half_speed_stage", spec(2, 2), 0.5};
        capped.spec.nodeExtraArgs[2] = {"--cpu-percent", "50"};
        cases.push_back(capped);
        Case wan{"1x2_50ms", spec(2, 2)};
        wan.spec.rttMs = 50;
        wan.spec.rateMbit = 50;
        cases.push_back(wan);

        double maxError = 0, worstReal = 0, worstPredicted = 0;
        std::string worst;
        for (const Case &c : cases) {
            const double real = runReal(c);
            const double predicted = predict(c, gflops, link, ringWork, gflops.at(1));
            const double error = std::abs(predicted - real) / real;
            std::printf("  %-22s real %8s samples/s, predicted %8s, error %5.1f%%\n", c.name.c_str(),
                        format::count(int64_t(real)).c_str(), format::count(int64_t(predicted)).c_str(), error * 100);
            std::fflush(stdout);
            report.add("real_" + c.name, real);
            report.add("predicted_" + c.name, predicted);
            report.add("error_" + c.name, error);
            if (error >= maxError) {
                maxError = error;
                worst = c.name;
                worstReal = real;
                worstPredicted = predicted;
            }
        }
        // The main figure: the worst case's prediction (measured) against its real rate (baseline).
        report.setResult(worstReal, worstPredicted, "samples/s", "worst_predicted_over_real");
        report.add("max_error", maxError);
        report.add("worst_case", worst);
        report.add("target_max_error", 0.2);
        report.finish(opts.jsonPath);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_sim_validation: %s\n", e.what());
        return 1;
    }
}
