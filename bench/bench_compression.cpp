// SPDX-License-Identifier: GPL-3.0-or-later
// bench_compression: does sending activations and gradients as 16-bit values cost
// accuracy? The MLP's 2-stage pipeline (two node processes over TLS on loopback, no WAN
// emulation) and the 2x2 swarm, each with the nodes' --peer-compression none (float32),
// bf16 and fp16, over several seeds (one seed varies the final accuracy by about 2
// points). Reports each configuration's final test accuracy (mean and worst over the
// seeds; the worst cluster of each run), the samples to 85%, samples/s and the bytes the
// nodes sent per sample. The main figure: bf16's mean final accuracy over float32's.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/support/bench_report.h"
#include "bench/support/swarm_bench_run.h"
#include "engine/common/format.h"

using namespace rookery;

namespace {

struct Tally
{
    std::vector<double> accuracy, samplesToTarget, samplesPerSecond, bytesPerSample;
    static double mean(const std::vector<double> &v)
    {
        double sum = 0;
        for (double x : v)
            sum += x;
        return v.empty() ? 0 : sum / double(v.size());
    }
    int reached() const
    {
        return int(std::count_if(samplesToTarget.begin(), samplesToTarget.end(), [](double s) { return s > 0; }));
    }
};

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_compression",
        "Activations and gradients as float32, bf16 and fp16: accuracy over seeds, bytes and speed (loopback).");
    try {
        bench::BenchReport report("bench_compression", opts.quick);
        const int64_t steps = opts.quick ? 150 : 1500, evalEvery = opts.quick ? steps : 100;
        const std::vector<int64_t> seeds = opts.quick ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2, 3};
        const std::vector<std::string> kinds = {"none", "bf16", "fp16"};
        const auto work =
            std::filesystem::temp_directory_path() / ("rookery-bench-compression-" + std::to_string(getpid()));
        std::map<std::string, double> meanAccuracy; // "pipeline_bf16" -> mean final accuracy
        for (const int nodes : {2, 4}) {
            const std::string shape = nodes == 2 ? "pipeline" : "swarm2x2";
            std::printf("MLP, %s, microbatch %lld, %lld steps per cluster, seeds %zu, loopback\n",
                        nodes == 2 ? "2-stage pipeline" : "2x2 swarm (two clusters of two stages)",
                        (long long)bench::kSwarmBenchBatch, (long long)steps, seeds.size());
            for (const auto &kind : kinds) {
                Tally t;
                for (const int64_t seed : seeds) {
                    bench::SwarmBenchSpec spec;
                    spec.nodes = nodes;
                    spec.rateMbit = 0;
                    spec.compression = kind;
                    spec.seed = seed;
                    const auto o = bench::runSwarmBench(spec, steps, evalEvery,
                                                        work / (shape + "-" + kind + "-" + std::to_string(seed)));
                    const double samples = double(steps * bench::kSwarmBenchBatch * spec.clusters());
                    std::printf("  %-5s seed %lld: %8s samples/s, %6.0f bytes/sample sent, to 85%%: %s, final "
                                "accuracy %.2f%%\n",
                                kind.c_str(), (long long)seed, format::count(int64_t(o.samplesPerSecond)).c_str(),
                                double(o.wireBytes) / samples,
                                o.samplesToTarget < 0 ? "not" : format::count(o.samplesToTarget).c_str(),
                                o.finalAccuracy * 100);
                    std::fflush(stdout);
                    t.accuracy.push_back(o.finalAccuracy);
                    t.samplesToTarget.push_back(double(o.samplesToTarget));
                    t.samplesPerSecond.push_back(o.samplesPerSecond);
                    t.bytesPerSample.push_back(double(o.wireBytes) / samples);
                }
                const std::string key = shape + "_" + (kind == "none" ? std::string("fp32") : kind);
                const double worst = *std::min_element(t.accuracy.begin(), t.accuracy.end());
                std::printf("  %-5s mean final accuracy %.2f%% (worst %.2f%%), reached 85%% in %d of %zu\n",
                            kind.c_str(), Tally::mean(t.accuracy) * 100, worst * 100, t.reached(), seeds.size());
                report.add(key + "_final_accuracy_mean", Tally::mean(t.accuracy));
                report.add(key + "_final_accuracy_worst", worst);
                report.add(key + "_reached_85", double(t.reached()));
                if (t.reached() == int(seeds.size()))
                    report.add(key + "_samples_to_85_mean", Tally::mean(t.samplesToTarget));
                report.add(key + "_samples_per_s", Tally::mean(t.samplesPerSecond));
                report.add(key + "_bytes_per_sample", Tally::mean(t.bytesPerSample));
                meanAccuracy[key] = Tally::mean(t.accuracy);
            }
        }
        std::filesystem::remove_all(work);
        report.add("seeds", double(seeds.size()));
        report.setResult(meanAccuracy["pipeline_fp32"], meanAccuracy["pipeline_bf16"], "final accuracy",
                         "bf16_accuracy_ratio");
        report.finish(opts.jsonPath);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_compression: error: %s\n", e.what());
        return 1;
    }
}
