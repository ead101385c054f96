// SPDX-License-Identifier: GPL-3.0-or-later
// bench_swarm: the MLP on Fashion-MNIST trained (a) by one process, (b) by a 2-stage
// pipeline of two node processes over TLS on loopback, (b') by the same 2-stage pipeline
// (same cut, batch, optimizer, one torch and one BLAS thread per stage) inside this
// process, (c) by a 2x2 swarm (two clusters of two stages, averaging over rings), all in
// this one run. Reports samples/s, the samples each needed to reach 85% test accuracy,
// the bytes on the wire per sample against the raw size of the tensors that must
// cross, and ratio_net_vs_inproc: (b) without its periodic tests over (b').
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <thread>

#include <unistd.h>

#include "bench/support/bench_report.h"
#include "bench/support/one_process_run.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/launcher/swarm_launcher.h"
#include "engine/model/model_zoo.h"
#include "engine/train/pipeline.h"
#include "engine/train/trainer.h"

using namespace rookery;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kBatch = 64;
constexpr double kLr = 0.05, kMomentum = 0.9;
constexpr int64_t kInterval = 10; // optimizer steps between ring averagings
constexpr double kTarget = 0.85;

struct Outcome
{
    double samplesPerSecond = 0;
    int64_t samplesToTarget = -1; ///< -1: not reached within the run
    double finalAccuracy = 0;
    double wireBytesPerSample = 0;
    double rawBytesPerSample = 0;
    std::string cuts;
};

// Checks the test set every `evalEvery` steps; the clock stops while it does.
Outcome oneProcess(const std::shared_ptr<const data::ImageDataset> &train, const data::ImageDataset &test,
                   int64_t steps, int64_t evalEvery)
{
    const auto r = bench::runOneProcess(train, test, steps, evalEvery);
    Outcome o;
    o.samplesPerSecond = r.samplesPerSecond;
    o.samplesToTarget = r.samplesToTarget;
    o.finalAccuracy = r.finalAccuracy;
    return o;
}

// What must cross, per sample: at each cut the activations forward, their gradient back
// (when the stages above train something) and the label; and the rings' share: every
// parameter reduce-scattered and all-gathered once per interval, 2(n-1) times its size
// over a ring of n clusters.
double rawBytesPerSample(const model::ModelSpec &spec, const std::vector<int64_t> &cuts, int clusters)
{
    const auto costs = model::layerCosts(spec, 1);
    double perSample = 0;
    for (const int64_t cut : cuts) {
        bool paramsAbove = false;
        for (int64_t i = 0; i < cut; ++i)
            paramsAbove = paramsAbove || costs[size_t(i)].parameters > 0;
        const double activation = double(costs[size_t(cut - 1)].activationBytes);
        perSample += activation * (paramsAbove ? 2 : 1) + sizeof(int64_t);
    }
    perSample /= double(clusters); // cuts of every cluster; each cluster sees its own samples
    const double ringPerRound = 2.0 * (clusters - 1) * double(model::parameterCount(spec)) * sizeof(float);
    return perSample + ringPerRound / double(kInterval * kBatch * clusters);
}

Outcome swarmRun(int nodes, int clusterSize, int64_t steps, int64_t evalEvery, const std::filesystem::path &work)
{
    launcher::SwarmLauncherSettings s;
    s.nodes = nodes;
    s.clusterSize = clusterSize;
    s.workDir = work;
    s.datasetDir = defaultFashionMnistDir();
    s.coordinatorArgs = {"--steps",
                         std::to_string(steps),
                         "--averaging-interval",
                         std::to_string(kInterval),
                         "--microbatch",
                         std::to_string(kBatch),
                         "--lr",
                         std::to_string(kLr),
                         "--momentum",
                         std::to_string(kMomentum)};
    s.nodeArgs = {"--max-cores", "1", "--eval-every", std::to_string(evalEvery)};
    s.restartCrashed = false;
    // In a build tree the programs are in app/, beside bench/; installed, next to us.
    if (const char *dir = std::getenv("ROOKERY_BIN_DIR"))
        s.binDir = dir;
    else if (const auto app = launcher::programDirectory().parent_path() / "app"; std::filesystem::exists(app))
        s.binDir = app;

    const std::regex progress(R"(^step (\d+)/(\d+) .* sent (\d+) bytes)");
    const std::regex evaluated(R"(^(?:evaluated|done:) cluster (\d+) at step (\d+): test accuracy ([0-9.]+)%)");
    const std::regex assigned(
        R"(^assignment: training: cluster (\d+)/(\d+), stage (\d+)/(\d+), layers \[(\d+),(\d+)\))");
    std::optional<Clock::time_point> start, end;
    std::map<std::string, uint64_t> sent;
    std::map<int, std::vector<std::pair<int64_t, double>>> accuracy; // per cluster: (step, accuracy)
    std::map<std::string, int64_t> cutOf;                            // per node holding a stage > 0: its first layer
    int clusters = 1;
    launcher::SwarmLauncher swarm(s, [&](const std::string &who, const std::string &line) {
        std::smatch m;
        if (std::regex_search(line, m, progress)) {
            sent[who] = std::stoull(m[3].str());
            if (!start && std::stoll(m[1].str()) > 0)
                start = Clock::now();
            if (m[1].str() == m[2].str() && !end)
                end = Clock::now();
        } else if (std::regex_search(line, m, evaluated)) {
            accuracy[std::stoi(m[1].str())].push_back({std::stoll(m[2].str()), std::stod(m[3].str()) / 100});
        } else if (std::regex_search(line, m, assigned)) {
            clusters = std::stoi(m[2].str());
            if (std::stoi(m[3].str()) > 0)
                cutOf[who] = std::stoll(m[5].str());
        }
        if (line.find("warning") != std::string::npos || line.find("error") != std::string::npos)
            std::printf("    [%s] %s\n", who.c_str(), line.c_str());
    });
    swarm.start();
    while (swarm.poll(std::chrono::milliseconds(200))) { }
    swarm.stop();
    for (int code : swarm.nodeExitCodes())
        if (code != 0)
            throw Error("a node of the swarm failed (exit status " + std::to_string(code) + ")");
    if (!start || !end)
        throw Error("the swarm printed no progress");

    Outcome o;
    // The first step counted above is the clock's start; the steps before it are few.
    o.samplesPerSecond = double(steps * kBatch * clusters) / std::chrono::duration<double>(*end - *start).count();
    // The swarm has reached the target when every cluster has (they average every interval).
    int64_t reachedAt = -1;
    for (const auto &[cluster, points] : accuracy) {
        int64_t first = -1;
        for (const auto &[step, acc] : points)
            if (acc >= kTarget && first < 0)
                first = step;
        reachedAt = first < 0 || reachedAt == -2 ? -2 : std::max(reachedAt, first);
        o.finalAccuracy = points.empty() ? 0 : points.back().second;
    }
    if (reachedAt >= 0)
        o.samplesToTarget = reachedAt * kBatch * clusters;
    uint64_t bytes = 0;
    for (const auto &[who, b] : sent)
        bytes += b;
    o.wireBytesPerSample = double(bytes) / double(steps * kBatch * clusters);
    std::vector<int64_t> cuts;
    for (const auto &[who, cut] : cutOf) {
        cuts.push_back(cut);
        o.cuts += (o.cuts.empty() ? "" : ",") + std::to_string(cut);
    }
    o.rawBytesPerSample = rawBytesPerSample(model::mlpSpec(), cuts, clusters);
    return o;
}

// The in-process asynchronous pipeline over `cuts` (one thread per stage, torch 1 x
// BLAS 1 each, as a node with --max-cores 1 runs), after a warm-up.
train::PipelineReport inProcessPipeline(const std::shared_ptr<const data::ImageDataset> &train,
                                        const std::vector<size_t> &cuts, int64_t steps)
{
    train::PipelineConfig c;
    c.model = model::mlpSpec();
    c.cuts = cuts;
    c.optimizer.learningRate = kLr;
    c.optimizer.momentum = kMomentum;
    c.microbatchSize = kBatch;
    c.mode = train::PipelineMode::Asynchronous;
    c.threads = {1, 1};
    train::Pipeline p(c, train);
    p.run(30); // allocations, caches, the snapshot pool
    return p.run(steps);
}

void print(const char *what, const Outcome &o)
{
    std::printf("  %-34s %8s samples/s  to 85%%: %9s samples  final %.2f%%", what,
                format::count(int64_t(o.samplesPerSecond)).c_str(),
                o.samplesToTarget < 0 ? "not" : format::count(o.samplesToTarget).c_str(), o.finalAccuracy * 100);
    if (o.rawBytesPerSample > 0)
        std::printf("  wire %s B/sample (raw %s)", format::count(int64_t(o.wireBytesPerSample)).c_str(),
                    format::count(int64_t(o.rawBytesPerSample)).c_str());
    std::printf("\n");
}

void record(bench::BenchReport &report, const std::string &prefix, const Outcome &o)
{
    report.add(prefix + "_samples_per_s", o.samplesPerSecond);
    report.add(prefix + "_samples_to_85", double(o.samplesToTarget));
    report.add(prefix + "_final_accuracy", o.finalAccuracy);
    if (o.rawBytesPerSample > 0) {
        report.add(prefix + "_wire_bytes_per_sample", o.wireBytesPerSample);
        report.add(prefix + "_raw_bytes_per_sample", o.rawBytesPerSample);
        report.add(prefix + "_wire_over_raw", o.wireBytesPerSample / o.rawBytesPerSample);
        report.add(prefix + "_cuts", o.cuts);
    }
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_swarm",
        "One process, a 2-stage pipeline over TLS, and a 2x2 swarm on loopback: samples/s, samples to 85%, "
        "bytes on the wire.");
    try {
        bench::BenchReport report("bench_swarm", opts.quick);
        const int64_t steps = opts.quick ? 400 : 1500, evalEvery = 100;
        const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
        auto train =
            std::make_shared<data::ImageDataset>(data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Train));
        const auto test = data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Test);
        std::printf("MLP, batch %lld, SGD lr %.2f momentum %.1f, %lld steps per cluster, %d cores\n", (long long)kBatch,
                    kLr, kMomentum, (long long)steps, cores);

        const auto config = device::defaultThreadConfig(cores);
        device::applyThreadConfig(config);
        const auto single = oneProcess(train, test, steps, evalEvery);
        print(("(a) one process, " + config.describe()).c_str(), single);

        const auto work = std::filesystem::temp_directory_path() / ("rookery-bench-swarm-" + std::to_string(getpid()));
        const auto pipeline = swarmRun(2, 2, steps, evalEvery, work / "pipeline");
        print("(b) 2-stage pipeline, 2 x 1 core", pipeline);
        std::vector<size_t> cuts;
        for (size_t at = 0; at < pipeline.cuts.size();) {
            const size_t comma = std::min(pipeline.cuts.find(',', at), pipeline.cuts.size());
            cuts.push_back(size_t(std::stoll(pipeline.cuts.substr(at, comma - at))));
            at = comma + 1;
        }
        if (cuts.size() != 1)
            throw Error("the 2-node pipeline reported cuts '" + pipeline.cuts + "', not one cut");
        // Like for like: the root of (b) tests its pipeline's model every evalEvery steps
        // on a thread of its own, on the same cores; (b') does not. So (b) again without
        // it (the final test only), then (b') in this process.
        const auto untested = swarmRun(2, 2, steps, 0, work / "pipeline-untested");
        print("(b) again, no periodic tests", untested);
        device::applyThreadConfig({1, 1});
        const auto inProcess = inProcessPipeline(train, cuts, steps);
        device::applyThreadConfig(config);
        const double netVsInProcess = untested.samplesPerSecond / inProcess.samplesPerSecond;
        std::printf("  %-34s %8s samples/s  (stages busy %.0f%% and %.0f%%); (b) untested / (b') = %.2f\n",
                    "(b') the same pipeline in-process", format::count(int64_t(inProcess.samplesPerSecond)).c_str(),
                    100 * inProcess.stages[0].busySeconds / inProcess.seconds,
                    100 * inProcess.stages[1].busySeconds / inProcess.seconds, netVsInProcess);
        const auto swarm = swarmRun(4, 2, steps, evalEvery, work / "swarm");
        print("(c) 2x2 swarm, 4 x 1 core", swarm);
        std::filesystem::remove_all(work);

        report.add("single_threads", config.describe());
        record(report, "single", single);
        record(report, "pipeline", pipeline);
        report.add("pipeline_untested_samples_per_s", untested.samplesPerSecond);
        report.add("inproc_pipeline_samples_per_s", inProcess.samplesPerSecond);
        report.add("ratio_net_vs_inproc", netVsInProcess);
        record(report, "swarm", swarm);
        report.add("cores", double(cores));
        report.setResult(single.samplesPerSecond, swarm.samplesPerSecond, "samples/s");
        report.finish(opts.jsonPath);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_swarm: error: %s\n", e.what());
        return 1;
    }
}
