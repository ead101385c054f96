// SPDX-License-Identifier: GPL-3.0-or-later
// bench_trainer: the engine's Trainer against a bare LibTorch loop on the same MLP,
// data and cores. The bare loop gets its fastest thread configuration (swept here);
// the engine uses its own default. Also: checkpoint save time and size for the CNN.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <unistd.h>

#include "bench/baselines/bare_torch_loop.h"
#include "bench/support/bench_report.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/model/model_zoo.h"
#include "engine/store/checkpoint_store.h"
#include "engine/train/trainer.h"

using namespace rookery;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kBatch = 64;
constexpr double kLr = 0.05, kMomentum = 0.9;

double engineSamplesPerSecond(const std::shared_ptr<const data::ImageDataset> &d, int steps)
{
    train::TrainerConfig c;
    c.model = model::mlpSpec();
    c.optimizer.learningRate = kLr;
    c.optimizer.momentum = kMomentum;
    c.batchSize = kBatch;
    train::Trainer t(c, d);
    for (int i = 0; i < 30; ++i)
        t.step();
    const auto start = Clock::now();
    for (int i = 0; i < steps; ++i)
        t.step();
    return double(steps) * kBatch / std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(argc, argv, "bench_trainer",
                                               "The engine's trainer against a bare LibTorch loop (samples/s).");
    bench::BenchReport report("bench_trainer", opts.quick);
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const int steps = opts.quick ? 300 : 1500;
    const int rounds = opts.quick ? 2 : 3;
    auto train =
        std::make_shared<data::ImageDataset>(data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Train));
    std::printf("%s\n%d cores, %d steps of %lld per measurement, best of %d\n", device::blasDescription().c_str(),
                cores, steps, (long long)kBatch, rounds);

    // Sweep the bare loop's thread configurations; keep the fastest.
    std::vector<device::ThreadConfig> configs;
    for (int t = 1; t <= cores; t *= 2)
        for (int b = 1; b <= cores; b *= 2)
            configs.push_back({t, b});
    device::ThreadConfig bestConfig;
    double bestBare = 0;
    for (const auto &config : configs) {
        device::applyThreadConfig(config);
        double best = 0;
        for (int r = 0; r < rounds; ++r)
            best = std::max(best, bench::bareMlpSamplesPerSecond(*train, steps, kBatch, kLr, kMomentum));
        std::printf("  bare loop, %-16s %s samples/s\n", config.describe().c_str(),
                    format::count(int64_t(best)).c_str());
        report.add("bare_" + std::to_string(config.torchThreads) + "x" + std::to_string(config.blasThreads), best);
        if (best > bestBare) {
            bestBare = best;
            bestConfig = config;
        }
    }

    // The engine with its own default configuration, interleaved with the bare loop's
    // best so that both see the same machine.
    const device::ThreadConfig engineConfig = device::defaultThreadConfig(cores);
    double engine = 0, bare = 0;
    for (int r = 0; r < rounds; ++r) {
        device::applyThreadConfig(engineConfig);
        engine = std::max(engine, engineSamplesPerSecond(train, steps));
        device::applyThreadConfig(bestConfig);
        bare = std::max(bare, bench::bareMlpSamplesPerSecond(*train, steps, kBatch, kLr, kMomentum));
    }
    std::printf("  engine trainer, %-11s %s samples/s\n", engineConfig.describe().c_str(),
                format::count(int64_t(engine)).c_str());
    report.add("bare_best_config", bestConfig.describe());
    report.add("engine_config", engineConfig.describe());
    report.setResult(bare, engine, "samples/s");

    // Checkpoint of the CNN: save time and size.
    device::applyThreadConfig(engineConfig);
    train::TrainerConfig cnn;
    cnn.model = model::cnnSpec();
    train::Trainer t(cnn, train);
    for (int i = 0; i < 5; ++i)
        t.step();
    const auto dir = std::filesystem::temp_directory_path() / ("rookery-bench-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    {
        store::CheckpointStore checkpoints(dir / "bench.db");
        double bestMs = 1e9;
        store::CheckpointInfo info;
        for (int i = 0; i < 5; ++i) {
            const auto start = Clock::now();
            const auto state = t.state();
            const int64_t id = checkpoints.save("bench", state, 2);
            bestMs = std::min(bestMs, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
            info = checkpoints.load(id).info;
        }
        report.add("cnn_checkpoint_save_ms", bestMs);
        report.add("cnn_checkpoint_tensor_bytes", double(info.bytes));
        std::printf("  CNN checkpoint: %s of tensors, saved in %.1f ms (state copy + one SQLite transaction, "
                    "synchronous=FULL)\n",
                    format::bytes(double(info.bytes)).c_str(), bestMs);
    }
    std::filesystem::remove_all(dir);
    report.finish(opts.jsonPath);
    return 0;
}
