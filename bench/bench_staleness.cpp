// SPDX-License-Identifier: GPL-3.0-or-later
// bench_staleness: how many samples the MLP needs to reach 85% test accuracy when its
// gradients are stale, and how momentum changes that. One process (the unsplit Trainer)
// against the 2-stage asynchronous pipeline in this process with a fixed window of
// microbatches in flight (3: loopback; 5: the default cap, what 50 ms needs; 8), each
// with SGD at learning rate 0.05 and momentum 0.9, 0.8 and 0.6, over several seeds. Every 25
// steps the model is tested on all 10,000 test images. Per configuration: the mean over
// seeds of the step of the first test at 85% or more ("first") and of the first step
// where five tests in a row average 85% ("reached", the middle one), and the mean final
// accuracy. A seed that never reached 85% counts as the run's length, so a mean over
// such seeds, and its ratio, is a lower bound (printed as such; key `..._seeds_reaching`).
// Main figure: the pipeline with the default cap's window (5) and the
// reference job's momentum (0.8), "first" over one process's with the same momentum.
// The pipelines step at the rate scaled by their gradients' staleness (the default,
// PipelineConfig::scaleRateByStaleness); rows ending in _constant_rate and
// _no_prediction switch that or weight prediction off. --only KEYS runs some rows,
// --seeds N sets the seeds.
//
// In one process the stages answer at once, so on their own they keep only one or two
// microbatches in flight whatever the window allows; over a link with a round trip the
// window fills. To give the gradients the staleness of a full window without a clock,
// the leaf holds each microbatch until the first stage has sent the window's last one
// (a StageHook): the first stage then steps window - 1 times between a microbatch's
// forward and its backward, as a root at 50 ms does with the default cap's window of 5.
// The pipeline drains at each test (Pipeline::run returns when its microbatches are
// back), so for a few microbatches after a test fewer are in flight: the mean staleness
// printed is what its first stage saw.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "bench/support/bench_report.h"
#include "engine/common/command_line.h"
#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/model/model_zoo.h"
#include "engine/model/partitioner.h"
#include "engine/train/pipeline.h"
#include "engine/train/trainer.h"

using namespace rookery;

namespace {

constexpr int64_t kBatch = 64;
constexpr double kTarget = 0.85;
constexpr int kTestEvery = 25;
constexpr size_t kRun = 5; // tests averaged for "reached"
constexpr std::chrono::milliseconds kHold{20};

struct Outcome
{
    int first = -1;   ///< step of the first test at kTarget; -1: none
    int reached = -1; ///< middle step of the first kRun tests in a row averaging kTarget
    double finalAccuracy = 0;
    double staleness = 0; ///< mean, first stage; 0 for one process
};

// Trains `steps` in slices of kTestEvery (`train(n)`), testing after each (`test()`).
template <class Train, class Test> Outcome track(int steps, Train train, Test test)
{
    Outcome o;
    std::deque<double> last;
    for (int step = kTestEvery; step <= steps; step += kTestEvery) {
        train(kTestEvery);
        const double accuracy = test();
        if (o.first < 0 && accuracy >= kTarget)
            o.first = step;
        last.push_back(accuracy);
        if (last.size() > kRun)
            last.pop_front();
        double sum = 0;
        for (double a : last)
            sum += a;
        if (o.reached < 0 && last.size() == kRun && sum / double(kRun) >= kTarget)
            o.reached = step - int(kRun / 2) * kTestEvery;
        o.finalAccuracy = accuracy;
    }
    return o;
}

struct Config
{
    std::string key; ///< "one_process_m08", "pipeline_w5_m08"
    int window = 0;  ///< 0: one process
    double momentum = 0.9;
    bool predict = true;   ///< weight prediction (PipelineConfig::predictWeights, on by default)
    bool scaleRate = true; ///< PipelineConfig::scaleRateByStaleness, on by default
};

Outcome runOne(const Config &config, int seed, int steps, const std::vector<size_t> &cuts,
               const std::shared_ptr<const data::ImageDataset> &train, const data::ImageDataset &test)
{
    train::OptimizerConfig optimizer;
    optimizer.learningRate = 0.05;
    optimizer.momentum = config.momentum;
    if (config.window == 0) {
        train::TrainerConfig c;
        c.model = model::mlpSpec();
        c.optimizer = optimizer;
        c.batchSize = kBatch;
        c.seed = uint64_t(seed);
        train::Trainer t(c, train);
        return track(
            steps,
            [&](int n) {
                for (int i = 0; i < n; ++i)
                    t.step();
            },
            [&] { return t.evaluate(test).accuracy; });
    }
    train::PipelineConfig c;
    c.model = model::mlpSpec();
    c.cuts = cuts;
    c.optimizer = optimizer;
    c.microbatchSize = kBatch;
    c.maxInFlight = config.window;
    c.predictWeights = config.predict;
    c.scaleRateByStaleness = config.scaleRate;
    c.seed = uint64_t(seed);
    // The window, filled: the leaf takes microbatch m once the first stage has sent
    // m + window - 1, or the run's last (each run numbers its microbatches from 0). The
    // root sizes its window from the trips it measures (WindowSizer), so it opens up to
    // its cap as the held trips grow; until then the leaf waits no more than kHold.
    std::mutex mutex;
    std::condition_variable sent;
    int64_t lastSent = -1, runEnd = 0;
    const int leaf = int(cuts.size());
    c.hook = [&](int stage, int64_t microbatch, bool backward) {
        if (backward)
            return;
        std::unique_lock lock(mutex);
        if (stage == 0) {
            lastSent = std::max(lastSent, microbatch);
            sent.notify_all();
        } else if (stage == leaf) {
            const int64_t want = std::min(microbatch + config.window - 1, runEnd - 1);
            sent.wait_for(lock, kHold, [&] { return lastSent >= want; });
        }
    };
    train::Pipeline p(c, train);
    int64_t stalenessSum = 0, backwards = 0;
    Outcome o = track(
        steps,
        [&](int n) {
            {
                std::lock_guard lock(mutex);
                runEnd = n;
                lastSent = -1;
            }
            const auto r = p.run(n);
            if (!r.finished)
                throw Error("the pipeline stopped: " + r.stop.reason);
            stalenessSum += r.stages.front().stalenessSum;
            backwards += r.stages.front().backwards;
        },
        [&] { return p.evaluate(test).accuracy; });
    o.staleness = backwards > 0 ? double(stalenessSum) / double(backwards) : 0;
    return o;
}

} // namespace

int main(int argc, char **argv)
{
    std::vector<std::string> only;
    int seedsWanted = 0;
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_staleness",
        "Samples to 85% for the MLP with stale gradients (in-process pipeline windows 3/5/8) against one process, "
        "at momentum 0.9, 0.8 and 0.6, over seeds.",
        [&](CLI::App &p) {
            p.add_option("--only", only,
                         "run only these configurations (keys as printed, e.g. one_process_m08,pipeline_w5_m08)")
                ->delimiter(',')
                ->type_name("KEYS")
                ->default_str(""); // every configuration
            cli::addWholeNumber(p, "--seeds", seedsWanted, 1, 50, "N",
                                "seeds 1..N per configuration (default 5; 1 with --quick)")
                ->default_str("");
        });
    try {
        bench::BenchReport report("bench_staleness", opts.quick);
        const int steps = opts.quick ? 100 : 1500;
        const int seeds = seedsWanted > 0 ? seedsWanted : opts.quick ? 1 : 5;
        device::applyThreadConfig({1, 1}); // one process and each stage thread: torch 1 x BLAS 1
        const auto train =
            std::make_shared<data::ImageDataset>(data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Train));
        const auto test = data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Test);
        const auto spec = model::mlpSpec();
        const auto cuts = model::partitionLayers(model::layerCosts(spec, kBatch),
                                                 std::vector<model::StageDevice>(2, {"core", 1, uint64_t(1) << 33}),
                                                 model::partitionOptionsFor(spec, kBatch))
                              .cuts();
        std::printf("MLP, batch %lld, SGD lr 0.05, %d steps, tests every %d steps, seeds 1-%d\n", (long long)kBatch,
                    steps, kTestEvery, seeds);
        std::vector<Config> configs;
        for (const double m : {0.9, 0.8, 0.6}) {
            const std::string mk = "m0" + std::to_string(int(m * 10 + 0.5));
            configs.push_back({"one_process_" + mk, 0, m});
            for (const int w : {3, 5, 8})
                configs.push_back({"pipeline_w" + std::to_string(w) + "_" + mk, w, m});
        }
        configs.push_back({"pipeline_w5_m08_no_prediction", 5, 0.8, false});
        // Every step at the whole learning rate, however stale its gradients (until 2026-12-07).
        configs.push_back({"pipeline_w3_m08_constant_rate", 3, 0.8, true, false});
        configs.push_back({"pipeline_w5_m08_constant_rate", 5, 0.8, true, false});
        if (!only.empty()) {
            std::vector<Config> kept;
            for (const auto &key : only) {
                const auto it =
                    std::find_if(configs.begin(), configs.end(), [&](const Config &c) { return c.key == key; });
                if (it == configs.end())
                    throw Error("--only: no configuration '" + key + "'");
                kept.push_back(*it);
            }
            configs = std::move(kept);
        }
        std::map<std::string, double> firstMean, reachedMean;
        std::map<std::string, bool> allReached;
        for (const auto &config : configs) {
            double first = 0, reached = 0, accuracy = 0, staleness = 0;
            int firstCount = 0, reachedCount = 0;
            std::string perSeed;
            std::printf("  %s: seeds ", config.key.c_str()); // progress: a dot per seed
            std::fflush(stdout);
            for (int seed = 1; seed <= seeds; ++seed) {
                const Outcome o = runOne(config, seed, steps, cuts, train, test);
                // A run that never got there counts as the run's length.
                first += o.first < 0 ? steps : o.first;
                reached += o.reached < 0 ? steps : o.reached;
                firstCount += o.first >= 0;
                reachedCount += o.reached >= 0;
                accuracy += o.finalAccuracy;
                staleness += o.staleness;
                perSeed += (perSeed.empty() ? "" : " ") + std::to_string(o.first) + "/" + std::to_string(o.reached);
                std::printf(".");
                std::fflush(stdout);
            }
            std::printf("\n");
            first /= seeds;
            reached /= seeds;
            accuracy /= seeds;
            staleness /= seeds;
            firstMean[config.key] = first;
            reachedMean[config.key] = reached;
            allReached[config.key] = firstCount == seeds;
            std::printf("  %-18s first %6.0f (%d of %d), reached %6.0f (%d of %d), final %.2f%%, staleness %.2f  "
                        "[first/reached by seed: %s]\n",
                        config.key.c_str(), first, firstCount, seeds, reached, reachedCount, seeds, accuracy * 100,
                        staleness, perSeed.c_str());
            report.add(config.key + "_first_steps", first);
            report.add(config.key + "_seeds_reaching", double(firstCount));
            report.add(config.key + "_reached_steps", reached);
            report.add(config.key + "_final_accuracy", accuracy);
            if (config.window > 0)
                report.add(config.key + "_staleness_mean", staleness);
        }
        for (const auto &config : configs) {
            const std::string base = "one_process_m0" + std::to_string(int(config.momentum * 10 + 0.5));
            if (config.window == 0 || !firstMean.count(base))
                continue; // its one process did not run (--only)
            const double ratio = firstMean[config.key] / firstMean[base];
            const double reachedRatio = reachedMean[config.key] / reachedMean[base];
            // A seed that never got there counts as the run's length: then the
            // ratio is only a lower bound.
            std::printf("  %-30s %s%.2fx one process's steps to the first test at 85%%, %.2fx to five in a row\n",
                        config.key.c_str(), allReached[config.key] ? "" : "at least ", ratio, reachedRatio);
            report.add(config.key + "_first_over_one_process", ratio);
            report.add(config.key + "_reached_over_one_process", reachedRatio);
        }
        if (firstMean.count("one_process_m08") && firstMean.count("pipeline_w5_m08"))
            report.setResult(firstMean["one_process_m08"], firstMean["pipeline_w5_m08"], "steps to 85% (first test)",
                             "pipeline_w5_m08_first_over_one_process_m08");
        report.finish(opts.jsonPath);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_staleness: %s\n", e.what());
        return 1;
    }
    return 0;
}
