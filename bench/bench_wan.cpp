// SPDX-License-Identifier: GPL-3.0-or-later
// bench_wan: the MLP's 2-stage pipeline, two node processes over TLS on loopback, with
// every peer link behind the WAN emulation (ROOKERY_WAN_EMULATION: a one-way delay of
// half the round trip and a 50 Mbit/s cap) at round trips of 0, 20, 50 and 100 ms.
// Reports samples/s for each, `ratio_50ms` (50 ms over 0 ms), the root's window
// (microbatches in flight) and mean staleness as it printed them, and (full runs, every
// 100 steps) the samples each needed to reach 85% test accuracy.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/support/bench_report.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/launcher/swarm_launcher.h"

using namespace rookery;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kBatch = 64;
constexpr double kRateMbit = 50;
constexpr double kTarget = 0.85;

struct Outcome
{
    double samplesPerSecond = 0;
    int window = 0; ///< the root's last reported window
    double staleness = 0;
    double finalAccuracy = -1;
    int64_t samplesToTarget = -1; ///< -1: 85% not reached within the run
};

Outcome pipelineRun(int rttMs, int64_t steps, int64_t evalEvery, const std::filesystem::path &work)
{
    const std::string wan = "delay_ms=" + std::to_string(rttMs / 2.0) + ",rate_mbit=" + std::to_string(kRateMbit);
    ::setenv("ROOKERY_WAN_EMULATION", wan.c_str(), 1); // the nodes inherit it
    launcher::SwarmLauncherSettings s;
    s.nodes = 2;
    s.clusterSize = 2;
    s.workDir = work;
    s.datasetDir = defaultFashionMnistDir();
    s.coordinatorArgs = {"--steps", std::to_string(steps), "--microbatch", std::to_string(kBatch), "--lr",
                         "0.05",    "--momentum",          "0.9"};
    s.nodeArgs = {"--max-cores", "1", "--eval-every", std::to_string(evalEvery)};
    s.restartCrashed = false;
    if (const char *dir = std::getenv("ROOKERY_BIN_DIR"))
        s.binDir = dir;
    else if (const auto app = launcher::programDirectory().parent_path() / "app"; std::filesystem::exists(app))
        s.binDir = app;

    const std::regex progress(R"(^step (\d+)/(\d+) )");
    const std::regex window(R"(window (\d+), staleness ([0-9.]+))");
    const std::regex evaluated(R"(^(evaluated|done:) cluster \d+ at step (\d+): test accuracy ([0-9.]+)%)");
    std::optional<Clock::time_point> start, end;
    Outcome o;
    launcher::SwarmLauncher swarm(s, [&](const std::string &who, const std::string &line) {
        std::smatch m;
        if (std::regex_search(line, m, progress)) {
            if (!start && std::stoll(m[1].str()) > 0)
                start = Clock::now();
            if (m[1].str() == m[2].str() && !end)
                end = Clock::now();
            if (std::regex_search(line, m, window)) {
                o.window = std::stoi(m[1].str());
                o.staleness = std::stod(m[2].str());
            }
        } else if (std::regex_search(line, m, evaluated)) {
            const double acc = std::stod(m[3].str()) / 100;
            if (m[1].str() == "done:")
                o.finalAccuracy = acc;
            if (acc >= kTarget && o.samplesToTarget < 0)
                o.samplesToTarget = std::stoll(m[2].str()) * kBatch;
        }
        if (line.find("error") != std::string::npos)
            std::printf("    [%s] %s\n", who.c_str(), line.c_str());
    });
    swarm.start();
    while (swarm.poll(std::chrono::milliseconds(200))) { }
    swarm.stop();
    ::unsetenv("ROOKERY_WAN_EMULATION");
    for (int code : swarm.nodeExitCodes())
        if (code != 0)
            throw Error("a node of the pipeline failed (exit status " + std::to_string(code) + ")");
    if (!start || !end)
        throw Error("the pipeline printed no progress");
    // The clock starts at the first step reported, so registration and planning are out.
    o.samplesPerSecond = double(steps * kBatch) / std::chrono::duration<double>(*end - *start).count();
    return o;
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
        const auto work = std::filesystem::temp_directory_path() / ("rookery-bench-wan-" + std::to_string(getpid()));
        std::vector<std::pair<int, Outcome>> runs;
        for (const int rtt : {0, 20, 50, 100}) {
            const auto o = pipelineRun(rtt, steps, evalEvery, work / ("rtt" + std::to_string(rtt)));
            std::printf("  round trip %3d ms: %8s samples/s  window %d, mean staleness %.2f, to 85%%: %s samples, "
                        "final accuracy %.2f%%\n",
                        rtt, format::count(int64_t(o.samplesPerSecond)).c_str(), o.window, o.staleness,
                        o.samplesToTarget < 0 ? "not" : format::count(o.samplesToTarget).c_str(),
                        o.finalAccuracy * 100);
            runs.emplace_back(rtt, o);
        }
        std::filesystem::remove_all(work);
        for (const auto &[rtt, o] : runs) {
            const std::string key = "rtt_" + std::to_string(rtt) + "ms";
            report.add(key + "_samples_per_s", o.samplesPerSecond);
            report.add(key + "_window", double(o.window));
            report.add(key + "_staleness", o.staleness);
            report.add(key + "_final_accuracy", o.finalAccuracy);
            report.add(key + "_samples_to_85", double(o.samplesToTarget));
        }
        report.add("rate_mbit", kRateMbit);
        report.setResult(runs[0].second.samplesPerSecond, runs[2].second.samplesPerSecond, "samples/s", "ratio_50ms");
        report.finish(opts.jsonPath);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_wan: error: %s\n", e.what());
        return 1;
    }
}
