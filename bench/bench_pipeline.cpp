// SPDX-License-Identifier: GPL-3.0-or-later
// bench_pipeline: the 2-stage asynchronous pipeline in one process (one thread per
// stage, torch 1 x BLAS 1 each) against the unsplit Trainer on the same cores in its
// fastest thread configuration (swept here), same MLP, batch and optimizer. Also the
// partitioner's predicted stage times against the measured ones.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "bench/support/bench_report.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/model/model_zoo.h"
#include "engine/model/partitioner.h"
#include "engine/train/pipeline.h"
#include "engine/train/trainer.h"

using namespace rookery;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kBatch = 64;

train::OptimizerConfig sgd()
{
    train::OptimizerConfig o;
    o.learningRate = 0.05;
    o.momentum = 0.9;
    return o;
}

double trainerSamplesPerSecond(const std::shared_ptr<const data::ImageDataset> &d, int steps)
{
    train::TrainerConfig c;
    c.model = model::mlpSpec();
    c.optimizer = sgd();
    c.batchSize = kBatch;
    train::Trainer t(c, d);
    for (int i = 0; i < 30; ++i)
        t.step();
    const auto start = Clock::now();
    for (int i = 0; i < steps; ++i)
        t.step();
    return double(steps) * kBatch / std::chrono::duration<double>(Clock::now() - start).count();
}

train::PipelineReport pipelineRun(const std::shared_ptr<const data::ImageDataset> &d, const std::vector<size_t> &cuts,
                                  train::PipelineMode mode, int steps)
{
    train::PipelineConfig c;
    c.model = model::mlpSpec();
    c.cuts = cuts;
    c.optimizer = sgd();
    c.microbatchSize = kBatch;
    c.mode = mode;
    c.threads = {1, 1};
    train::Pipeline p(c, d);
    p.run(30); // warm-up: allocations, caches, the snapshot pool
    return p.run(steps);
}

std::string cutText(const std::vector<size_t> &cuts)
{
    std::string t;
    for (size_t c : cuts)
        t += (t.empty() ? "" : ",") + std::to_string(c);
    return t;
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_pipeline", "The 2-stage in-process pipeline against the unsplit trainer (samples/s).");
    bench::BenchReport report("bench_pipeline", opts.quick);
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const int usable = std::min(cores, 2); // the comparison: the same two cores
    const int steps = opts.quick ? 300 : 1500;
    const int rounds = opts.quick ? 2 : 3;
    auto train =
        std::make_shared<data::ImageDataset>(data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Train));
    std::printf("%s\n%d cores (using %d), %d steps of %lld per measurement, best of %d\n",
                device::blasDescription().c_str(), cores, usable, steps, (long long)kBatch, rounds);

    // The partitioner's cut for two identical cores does not depend on their speed, so
    // it is taken first; its predicted times come at the end from the measured speed.
    const auto spec = model::mlpSpec();
    const auto costs = model::layerCosts(spec, kBatch);
    const auto options = model::partitionOptionsFor(spec, kBatch);
    const auto cuts =
        model::partitionLayers(costs, std::vector<model::StageDevice>(2, {"core", 1, uint64_t(1) << 33}), options)
            .cuts();
    report.add("cuts", cutText(cuts));

    // The unsplit model over every thread configuration on the two cores.
    device::ThreadConfig bestConfig;
    double bestUnsplit = 0;
    for (int t = 1; t <= usable; t *= 2)
        for (int b = 1; b <= usable; b *= 2) {
            const device::ThreadConfig config{t, b};
            device::applyThreadConfig(config);
            double best = 0;
            for (int r = 0; r < rounds; ++r)
                best = std::max(best, trainerSamplesPerSecond(train, steps));
            std::printf("  unsplit, %-16s %s samples/s\n", config.describe().c_str(),
                        format::count(int64_t(best)).c_str());
            report.add("unsplit_" + std::to_string(t) + "x" + std::to_string(b), best);
            if (best > bestUnsplit) {
                bestUnsplit = best;
                bestConfig = config;
            }
        }

    // The pipeline, the unsplit model's best and the unsplit model on one core (the
    // speed a device profile would report, and what the partitioner is given),
    // interleaved so that all three see the same machine.
    double unsplit = 0, pipeline = 0, oneCore = 0;
    train::PipelineReport best;
    for (int r = 0; r < rounds; ++r) {
        device::applyThreadConfig({1, 1});
        oneCore = std::max(oneCore, trainerSamplesPerSecond(train, steps));
        device::applyThreadConfig(bestConfig);
        unsplit = std::max(unsplit, trainerSamplesPerSecond(train, steps));
        auto run = pipelineRun(train, cuts, train::PipelineMode::Asynchronous, steps);
        if (run.samplesPerSecond > pipeline) {
            pipeline = run.samplesPerSecond;
            best = run;
        }
    }
    const auto sync = pipelineRun(train, cuts, train::PipelineMode::Synchronous, steps / 2);
    std::printf("  pipeline, 2 stages, torch 1 x blas 1 each: %s samples/s (synchronous mode %s)\n",
                format::count(int64_t(pipeline)).c_str(), format::count(int64_t(sync.samplesPerSecond)).c_str());
    report.add("unsplit_best_config", bestConfig.describe());
    report.add("pipeline_sync_samples_per_s", sync.samplesPerSecond);
    report.setResult(unsplit, pipeline, "samples/s");

    // Predicted against measured time per microbatch, per stage.
    double flopsPerStep = 0;
    for (size_t i = 0; i < costs.size(); ++i)
        flopsPerStep += model::trainingFlops(costs, i);
    const double gflops = oneCore / double(kBatch) * flopsPerStep / 1e9;
    const std::vector<model::StageDevice> devices(2, model::StageDevice{"core", gflops, uint64_t(1) << 33});
    const auto plan = model::evaluateCut(costs, devices, options, cuts);
    std::printf("  one core: %s samples/s unsplit, %.1f GFLOP/s of training; partitioner: %s\n",
                format::count(int64_t(oneCore)).c_str(), gflops, plan.describe().c_str());
    report.add("core_samples_per_s", oneCore);
    report.add("core_gflops", gflops);
    double worst = 0;
    for (size_t s = 0; s < best.stages.size(); ++s) {
        const double predicted = plan.stages[s].seconds;
        const double measured = best.stages[s].secondsPerMicrobatch();
        const double error = (predicted - measured) / measured;
        worst = std::max(worst, std::abs(error));
        std::printf("  stage %zu [%zu,%zu): predicted %.3f ms, measured %.3f ms (%+.0f%%), staleness mean %.2f max "
                    "%lld, busy %.0f%%\n",
                    s, plan.stages[s].firstLayer, plan.stages[s].lastLayer, predicted * 1e3, measured * 1e3,
                    error * 100, best.stages[s].meanStaleness(), (long long)best.stages[s].stalenessMax,
                    100 * best.stages[s].busySeconds / best.seconds);
        const std::string key = "stage" + std::to_string(s);
        report.add(key + "_predicted_ms", predicted * 1e3);
        report.add(key + "_measured_ms", measured * 1e3);
        report.add(key + "_error", error);
        report.add(key + "_busy_fraction", best.stages[s].busySeconds / best.seconds);
        report.add(key + "_staleness_mean", best.stages[s].meanStaleness());
    }
    report.add("stage_time_error_max", worst);
    report.finish(opts.jsonPath);
    return 0;
}
