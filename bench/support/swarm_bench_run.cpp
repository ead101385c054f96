// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/support/swarm_bench_run.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>

#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/launcher/swarm_launcher.h"

namespace rookery::bench {

using Clock = std::chrono::steady_clock;

std::filesystem::path benchProgramDirectory()
{
    if (const char *dir = std::getenv("ROOKERY_BIN_DIR"))
        return dir;
    if (const auto app = launcher::programDirectory().parent_path() / "app"; std::filesystem::exists(app))
        return app;
    return {};
}

SwarmBenchOutcome runSwarmBench(const SwarmBenchSpec &spec, int64_t steps, int64_t evalEvery,
                                const std::filesystem::path &work)
{
    const bool emulated = spec.rttMs > 0 || spec.rateMbit > 0;
    if (emulated) {
        const std::string wan =
            "delay_ms=" + std::to_string(spec.rttMs / 2.0) + ",rate_mbit=" + std::to_string(spec.rateMbit);
        ::setenv("ROOKERY_WAN_EMULATION", wan.c_str(), 1); // the nodes inherit it
    } else {
        ::unsetenv("ROOKERY_WAN_EMULATION");
    }
    launcher::SwarmLauncherSettings s;
    s.nodes = spec.nodes;
    s.clusterSize = spec.clusterSize;
    s.nodeExtraArgs = spec.nodeExtraArgs;
    s.workDir = work;
    s.datasetDir = defaultFashionMnistDir();
    if (spec.jobFile.empty())
        s.coordinatorArgs = {"--microbatch", std::to_string(kSwarmBenchBatch),
                             "--lr",         std::to_string(kSwarmBenchLearningRate),
                             "--momentum",   std::to_string(kSwarmBenchMomentum)};
    else
        s.coordinatorArgs = {"--job", spec.jobFile.string()};
    for (const std::string &arg :
         {std::string("--steps"), std::to_string(steps), std::string("--seed"), std::to_string(spec.seed),
          std::string("--averaging-interval"), std::to_string(spec.averagingInterval), std::string("--outer-lr"),
          std::to_string(spec.outerLearningRate), std::string("--outer-momentum"), std::to_string(spec.outerMomentum)})
        s.coordinatorArgs.push_back(arg);
    const int64_t microbatch = spec.jobFile.empty() ? kSwarmBenchBatch : spec.microbatch;
    if (spec.overlap)
        s.coordinatorArgs.push_back("--overlap-averaging");
    if (spec.maxWindow > 0) {
        s.coordinatorArgs.push_back("--max-window");
        s.coordinatorArgs.push_back(std::to_string(spec.maxWindow));
    }
    s.nodeArgs = {"--max-cores",        "1",
                  "--eval-every",       std::to_string(evalEvery),
                  "--peer-compression", spec.compression,
                  "--ring-compression", spec.ringCompression};
    s.restartCrashed = false;
    s.binDir = benchProgramDirectory();

    const std::regex progress(R"(^step (\d+)/(\d+) )");
    const std::regex window(R"(window (\d+), staleness ([0-9.]+))");
    const std::regex evaluated(R"(^(evaluated|done:) cluster (\d+) at step (\d+): test accuracy ([0-9.]+)%)");
    const std::regex sent(R"(sent (\d+) bytes \((\d+) in rings\))");
    const std::regex loss(R"(  loss ([0-9.]+))");
    std::optional<Clock::time_point> start, end;
    std::map<std::string, uint64_t> ringBytes, wireBytes; // by node
    std::map<int, int64_t> reached;                       // by cluster: the first step at 85%
    std::optional<int64_t> consensusReached; // the first round whose consensus (the swarm's model) tested at 85%
    std::map<int, double> finalAccuracy;     // by cluster
    SwarmBenchOutcome o;
    launcher::SwarmLauncher swarm(s, [&](const std::string &who, const std::string &line) {
        if (spec.onLine)
            spec.onLine(who, line);
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
            if (std::regex_search(line, m, loss)) {
                o.lastLoss = std::stod(m[1].str());
                if (o.firstLoss < 0)
                    o.firstLoss = o.lastLoss;
            }
            if (std::regex_search(line, m, sent)) {
                wireBytes[who] = std::max<uint64_t>(wireBytes[who], std::stoull(m[1].str()));
                ringBytes[who] = std::max<uint64_t>(ringBytes[who], std::stoull(m[2].str()));
            }
        } else if (std::regex_search(line, m, evaluated)) {
            const int cluster = std::stoi(m[2].str());
            const double acc = std::stod(m[4].str()) / 100;
            if (m[1].str() == "done:")
                finalAccuracy[cluster] = acc;
            const int64_t step = std::stoll(m[3].str());
            if (acc >= kSwarmBenchTarget && !reached.count(cluster))
                reached[cluster] = step;
            if (acc >= kSwarmBenchTarget && line.find("(the swarm's model)") != std::string::npos)
                consensusReached = std::min(consensusReached.value_or(step), step);
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
            throw Error("a node of the swarm failed (exit status " + std::to_string(code) + ")");
    if (!start || !end)
        throw Error("the swarm printed no progress");
    // The clock starts at the first step reported, so registration and planning are out.
    const double samples = double(steps * microbatch * spec.clusters());
    o.samplesPerSecond = samples / std::chrono::duration<double>(*end - *start).count();
    for (const auto &[who, bytes] : ringBytes)
        o.ringBytes += bytes;
    for (const auto &[who, bytes] : wireBytes)
        o.wireBytes += bytes;
    o.bytesPerSample = double(o.ringBytes) / samples;
    // The swarm got there when its last cluster did, or at the first round whose
    // consensus did: every cluster held that model after the round, whichever tested it.
    std::optional<int64_t> reachedAt = consensusReached;
    if (int(reached.size()) == spec.clusters()) {
        int64_t step = 0;
        for (const auto &[cluster, at] : reached)
            step = std::max(step, at);
        reachedAt = std::min(reachedAt.value_or(step), step);
    }
    if (reachedAt)
        o.samplesToTarget = *reachedAt * microbatch * spec.clusters();
    if (!finalAccuracy.empty()) { // the worst cluster's
        o.finalAccuracy = 1;
        for (const auto &[cluster, acc] : finalAccuracy)
            o.finalAccuracy = std::min(o.finalAccuracy, acc);
    }
    return o;
}

} // namespace rookery::bench
