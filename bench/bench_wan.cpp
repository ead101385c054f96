// SPDX-License-Identifier: GPL-3.0-or-later
// bench_wan: the MLP's 2-stage pipeline, two node processes over TLS on loopback, with
// every peer link behind the WAN emulation (ROOKERY_WAN_EMULATION: a one-way delay of
// half the round trip and a 50 Mbit/s cap) at round trips of 0, 20, 50 and 100 ms.
// Reports samples/s for each, `ratio_50ms` (50 ms over 0 ms), the root's window
// (microbatches in flight) and mean staleness as it printed them, and (full runs, every
// 100 steps) the samples each needed to reach 85% test accuracy. At 50 ms also with the
// tensors as bf16 and fp16 (--peer-compression; key `bf16_speedup_50ms`), and at 50 and
// 100 ms with the window capped at 3 (--max-window, the job's max_window; keys
// `rtt_50ms_window_3_...`, `ratio_50ms_window_3`).
//
// Then the 2x2 swarm (two clusters of two stages, four node processes) at 50 ms, with
// activations and gradients as bf16 (the nodes' default): plain ring averaging every 10
// steps on the stage thread with float32 ring chunks (what the swarm did before ring
// chunks went as bf16), the same with bf16 chunks, with rounds beside training
// (--overlap-averaging; key `overlap_speedup`), with int8 chunks (with error feedback;
// the nodes' default --ring-compression since stop 50), and with DiLoCo's outer
// Nesterov step (outer learning rate 0.7, momentum 0.9) every 100 steps with bf16 chunks
// and every 50 (resources/jobs/mlp.json's averaging) with bf16 and int8 chunks. Key
// `bytes_per_sample_cross_cluster`: the ring bytes all nodes sent (every ring joins the
// two clusters) over the samples the swarm trained, for the configuration with the
// fewest that ended within kEqualAccuracyPoints of the float32 plain run's final
// accuracy; `cross_cluster_reduction`: the float32 plain run's over that (and
// `cross_cluster_reduction_outer_every_100_bf16`, whatever its accuracy). All with
// samples to 85% and final accuracy. Each 2x2 root tests every 50 steps where one
// process tests every 100, so that both measure every 6,400 samples; a test of the
// swarm's model (the consensus of a round, the same in both clusters) counts for the
// swarm.
//
// The MLP job at the nodes' defaults (outer step every 50, int8 chunks) also runs at 0, 20 and
// 100 ms: key `swarm2x2_ratio_50ms`, its samples/s at 50 ms over 0 ms, and
// `swarm2x2_worst_to_85_over_one_process`, the most samples to 85% of the four round
// trips over one process's. First, one process trains the MLP (no network; both cores),
// the baseline of every configuration's samples to 85% (keys
// `..._to_85_over_one_process`; issue 16 asks for at most 1.3).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "bench/support/bench_report.h"
#include "bench/support/one_process_run.h"
#include "bench/support/swarm_bench_run.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"

using namespace rookery;

namespace {

constexpr int64_t kBatch = bench::kSwarmBenchBatch;
constexpr double kRateMbit = 50;
// Final accuracies within this many points count as equal (bytes_per_sample_cross_cluster):
// plain_every_10 alone ended 87.12-87.61% over three seeds (2026-12-06).
constexpr double kEqualAccuracyPoints = 0.5;

using RunSpec = bench::SwarmBenchSpec;
using Outcome = bench::SwarmBenchOutcome;

void printPipelineRun(const std::string &what, const Outcome &o)
{
    std::printf("  %-24s %8s samples/s  window %d, mean staleness %.2f, to 85%%: %s samples, final accuracy %.2f%%\n",
                (what + ":").c_str(), format::count(int64_t(o.samplesPerSecond)).c_str(), o.window, o.staleness,
                o.samplesToTarget < 0 ? "not" : format::count(o.samplesToTarget).c_str(), o.finalAccuracy * 100);
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_wan",
        "The 2-stage MLP pipeline over emulated internet links (50 Mbit/s, round trip 0/20/50/100 ms).");
    try {
        bench::BenchReport report("bench_wan", opts.quick);
        // Full: long enough to see how many samples each needs to reach 85%.
        const int64_t steps = opts.quick ? 150 : 1500, evalEvery = opts.quick ? steps : 100;
        std::printf("MLP, 2-stage pipeline, microbatch %lld, %lld steps, links capped at %.0f Mbit/s\n",
                    (long long)kBatch, (long long)steps, kRateMbit);
        bench::OneProcessOutcome single;
        {
            const auto train = std::make_shared<data::ImageDataset>(
                data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Train));
            const auto test = data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Test);
            const auto threads = device::defaultThreadConfig(int(std::max(1u, std::thread::hardware_concurrency())));
            device::applyThreadConfig(threads);
            single = bench::runOneProcess(train, test, steps, evalEvery);
            std::printf("  %-24s %8s samples/s  (%s), to 85%%: %s samples, final accuracy %.2f%%\n",
                        "one process, no network:", format::count(int64_t(single.samplesPerSecond)).c_str(),
                        threads.describe().c_str(),
                        single.samplesToTarget < 0 ? "not" : format::count(single.samplesToTarget).c_str(),
                        single.finalAccuracy * 100);
        }
        // Samples to 85% over one process's; -1 when either did not get there.
        const auto overOne = [&](const Outcome &o) {
            return o.samplesToTarget < 0 || single.samplesToTarget <= 0
                       ? -1.0
                       : double(o.samplesToTarget) / double(single.samplesToTarget);
        };
        const auto work = std::filesystem::temp_directory_path() / ("rookery-bench-wan-" + std::to_string(getpid()));
        std::vector<std::pair<int, Outcome>> runs;
        for (const int rtt : {0, 20, 50, 100}) {
            const auto o = bench::runSwarmBench({rtt}, steps, evalEvery, work / ("rtt" + std::to_string(rtt)));
            printPipelineRun("round trip " + std::to_string(rtt) + " ms", o);
            runs.emplace_back(rtt, o);
        }
        // At 50 ms, tensors as 16-bit values: half the bytes on a link that is the
        // bottleneck. Key `bf16_speedup_50ms`: bf16 over fp32 samples/s.
        std::vector<std::pair<std::string, Outcome>> compressed;
        for (const char *c : {"bf16", "fp16"}) {
            RunSpec spec{50};
            spec.compression = c;
            const auto o = bench::runSwarmBench(spec, steps, evalEvery, work / (std::string("rtt50-") + c));
            printPipelineRun(std::string("round trip 50 ms, ") + c, o);
            compressed.emplace_back(c, o);
        }
        // The window capped at 3 (stages + 1: no microbatch beyond the loopback window;
        // the job's max_window): staleness 2 instead of 4, against the speed the larger
        // window buys. Keys rtt_50ms_window_3_..., rtt_100ms_window_3_....
        std::vector<std::pair<int, Outcome>> capped;
        for (const int rtt : {50, 100}) {
            RunSpec spec{rtt};
            spec.maxWindow = 3;
            const auto o = bench::runSwarmBench(spec, steps, evalEvery, work / ("window3-rtt" + std::to_string(rtt)));
            printPipelineRun("round trip " + std::to_string(rtt) + " ms, window cap 3", o);
            capped.emplace_back(rtt, o);
        }

        // The 2x2 swarm at 50 ms: the cross-cluster bytes of plain averaging every 10
        // steps against ring chunks as bf16 and int8, and DiLoCo's outer step every 100
        // and every 50.
        const int64_t swarmEvalEvery = std::max<int64_t>(1, evalEvery / 2); // two clusters
        std::printf("2x2 swarm (two clusters of two stages), round trip 50 ms, %lld steps per cluster, bf16 "
                    "activations, a test every %lld steps per cluster\n",
                    (long long)steps, (long long)swarmEvalEvery);
        RunSpec plain{50, 4, 10, 1, 0};
        plain.compression = "bf16";
        RunSpec plainBf16 = plain, overlapped = plain, plainInt8 = plain, outer100 = plain, outer50 = plain;
        overlapped.overlap = true;
        plainBf16.ringCompression = outer100.ringCompression = outer50.ringCompression = "bf16";
        plainInt8.ringCompression = "int8";
        outer100.averagingInterval = 100;
        outer50.averagingInterval = 50; // resources/jobs/mlp.json's averaging
        outer100.outerLearningRate = outer50.outerLearningRate = 0.7;
        outer100.outerMomentum = outer50.outerMomentum = 0.9;
        RunSpec outer50Int8 = outer50;
        outer50Int8.ringCompression = "int8";
        std::vector<std::pair<std::string, Outcome>> averaging;
        for (const auto &[name, spec] :
             {std::pair{std::string("plain_every_10"), plain}, std::pair{std::string("plain_every_10_bf16"), plainBf16},
              std::pair{std::string("overlapped_every_10"), overlapped},
              std::pair{std::string("plain_every_10_int8"), plainInt8},
              std::pair{std::string("outer_every_100_bf16"), outer100},
              std::pair{std::string("outer_every_50_bf16"), outer50},
              std::pair{std::string("outer_every_50_int8"), outer50Int8}}) {
            const auto o = bench::runSwarmBench(spec, steps, swarmEvalEvery, work / name);
            std::printf("  %-20s (interval %lld, outer lr %.1f, momentum %.1f, ring %s): %8s samples/s, ring %s "
                        "sent, %.0f bytes/sample across clusters, to 85%%: %s samples, final accuracy %.2f%% (worst "
                        "cluster)\n",
                        name.c_str(), (long long)spec.averagingInterval, spec.outerLearningRate, spec.outerMomentum,
                        spec.ringCompression == "none" ? "float32" : spec.ringCompression.c_str(),
                        format::count(int64_t(o.samplesPerSecond)).c_str(), format::bytes(o.ringBytes).c_str(),
                        o.bytesPerSample, o.samplesToTarget < 0 ? "not" : format::count(o.samplesToTarget).c_str(),
                        o.finalAccuracy * 100);
            averaging.emplace_back(name, o);
        }
        // The MLP job at the nodes' defaults: outer_every_50_int8 above at 50 ms, and at the
        // other round trips below.
        const Outcome &jobAt50 = std::find_if(averaging.begin(), averaging.end(), [](const auto &row) {
                                     return row.first == "outer_every_50_int8";
                                 })->second;
        std::vector<std::pair<int, Outcome>> swarmRuns;
        for (const int rtt : {0, 20, 100}) {
            RunSpec spec = outer50Int8;
            spec.rttMs = rtt;
            const auto o =
                bench::runSwarmBench(spec, steps, swarmEvalEvery, work / ("swarm-rtt" + std::to_string(rtt)));
            std::printf("  2x2, the MLP job's averaging, round trip %3d ms: %8s samples/s, to 85%%: %s samples (%.2fx "
                        "one process's), final accuracy %.2f%%\n",
                        rtt, format::count(int64_t(o.samplesPerSecond)).c_str(),
                        o.samplesToTarget < 0 ? "not" : format::count(o.samplesToTarget).c_str(), overOne(o),
                        o.finalAccuracy * 100);
            swarmRuns.emplace_back(rtt, o);
        }
        std::filesystem::remove_all(work);
        for (const auto &[name, o] : averaging) {
            report.add("swarm2x2_" + name + "_samples_per_s", o.samplesPerSecond);
            report.add("swarm2x2_" + name + "_bytes_per_sample", o.bytesPerSample);
            report.add("swarm2x2_" + name + "_samples_to_85", double(o.samplesToTarget));
            report.add("swarm2x2_" + name + "_final_accuracy", o.finalAccuracy);
            report.add("swarm2x2_" + name + "_to_85_over_one_process", overOne(o));
        }
        for (const auto &[rtt, o] : swarmRuns) {
            report.add("swarm2x2_rtt_" + std::to_string(rtt) + "ms_samples_per_s", o.samplesPerSecond);
            report.add("swarm2x2_rtt_" + std::to_string(rtt) + "ms_final_accuracy", o.finalAccuracy);
            report.add("swarm2x2_rtt_" + std::to_string(rtt) + "ms_to_85_over_one_process", overOne(o));
        }
        if (swarmRuns[0].second.samplesPerSecond > 0)
            report.add("swarm2x2_ratio_50ms", jobAt50.samplesPerSecond / swarmRuns[0].second.samplesPerSecond);
        // Issue 16's target: the worst of the four round trips (-1 when one did not get there).
        double worst = overOne(jobAt50);
        for (const auto &[rtt, o] : swarmRuns)
            worst = worst < 0 || overOne(o) < 0 ? -1 : std::max(worst, overOne(o));
        report.add("swarm2x2_worst_to_85_over_one_process", worst);
        std::printf("  2x2, the MLP job's averaging: samples to 85%% over one process's, the worst of 0/20/50/100 ms: "
                    "%.2fx\n",
                    worst);
        report.add("one_process_samples_per_s", single.samplesPerSecond);
        report.add("one_process_samples_to_85", double(single.samplesToTarget));
        report.add("one_process_final_accuracy", single.finalAccuracy);
        const Outcome &base = averaging[0].second, &overlap = averaging[2].second, &diloco = averaging[4].second;
        // Issue 16 asks for 10x fewer cross-cluster bytes than plain_every_10 at equal
        // accuracy: the fewest bytes of a configuration that ended no more than
        // kEqualAccuracyPoints below it (the spread of one configuration over seeds).
        const Outcome *fewest = &base;
        std::string fewestName = averaging[0].first;
        for (const auto &[name, o] : averaging)
            if (o.bytesPerSample > 0 && o.bytesPerSample < fewest->bytesPerSample &&
                o.finalAccuracy * 100 >= base.finalAccuracy * 100 - kEqualAccuracyPoints) {
                fewest = &o;
                fewestName = name;
            }
        std::printf("  at equal accuracy (at most %.1f points below plain_every_10): fewest bytes %s, %.0f "
                    "bytes/sample, %.1fx fewer\n",
                    kEqualAccuracyPoints, fewestName.c_str(), fewest->bytesPerSample,
                    fewest->bytesPerSample > 0 ? base.bytesPerSample / fewest->bytesPerSample : 0.0);
        report.add("bytes_per_sample_cross_cluster", fewest->bytesPerSample);
        if (fewest->bytesPerSample > 0)
            report.add("cross_cluster_reduction", base.bytesPerSample / fewest->bytesPerSample);
        if (diloco.bytesPerSample > 0)
            report.add("cross_cluster_reduction_outer_every_100_bf16", base.bytesPerSample / diloco.bytesPerSample);
        if (base.samplesPerSecond > 0)
            report.add("overlap_speedup", overlap.samplesPerSecond / base.samplesPerSecond);
        for (const auto &[rtt, o] : runs) {
            const std::string key = "rtt_" + std::to_string(rtt) + "ms";
            report.add(key + "_samples_per_s", o.samplesPerSecond);
            report.add(key + "_window", double(o.window));
            report.add(key + "_staleness", o.staleness);
            report.add(key + "_final_accuracy", o.finalAccuracy);
            report.add(key + "_samples_to_85", double(o.samplesToTarget));
            report.add(key + "_to_85_over_one_process", overOne(o));
        }
        for (const auto &[rtt, o] : capped) {
            const std::string key = "rtt_" + std::to_string(rtt) + "ms_window_3";
            report.add(key + "_samples_per_s", o.samplesPerSecond);
            report.add(key + "_staleness", o.staleness);
            report.add(key + "_final_accuracy", o.finalAccuracy);
            report.add(key + "_samples_to_85", double(o.samplesToTarget));
            report.add(key + "_to_85_over_one_process", overOne(o));
        }
        if (runs[0].second.samplesPerSecond > 0)
            report.add("ratio_50ms_window_3", capped[0].second.samplesPerSecond / runs[0].second.samplesPerSecond);
        for (const auto &[c, o] : compressed) {
            report.add("rtt_50ms_" + c + "_samples_per_s", o.samplesPerSecond);
            report.add("rtt_50ms_" + c + "_final_accuracy", o.finalAccuracy);
            report.add("rtt_50ms_" + c + "_samples_to_85", double(o.samplesToTarget));
        }
        if (runs[2].second.samplesPerSecond > 0)
            report.add("bf16_speedup_50ms", compressed[0].second.samplesPerSecond / runs[2].second.samplesPerSecond);
        report.add("rate_mbit", kRateMbit);
        report.setResult(runs[0].second.samplesPerSecond, runs[2].second.samplesPerSecond, "samples/s", "ratio_50ms");
        report.finish(opts.jsonPath);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_wan: error: %s\n", e.what());
        return 1;
    }
}
