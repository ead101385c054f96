// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace rookery::bench {

/// One swarm of node processes on loopback (rookery-local-swarm's launcher): its size,
/// its links and how its clusters average. The MLP unless `jobFile` names a job.
struct SwarmBenchSpec
{
    int rttMs = 0; ///< the WAN emulation's round trip (ROOKERY_WAN_EMULATION)
    int nodes = 2; ///< 2: one pipeline; 4: the 2x2 swarm
    int64_t averagingInterval = 10;
    double outerLearningRate = 1; ///< 1 and 0: plain averaging
    double outerMomentum = 0;
    bool overlap = false;                 ///< rounds beside training (--overlap-averaging)
    std::string compression = "none";     ///< the nodes' --peer-compression
    std::string ringCompression = "none"; ///< the nodes' --ring-compression
    double rateMbit = 50;                 ///< the emulated links' cap; 0 with rttMs 0: no emulation at all
    int64_t seed = 1;                     ///< the run's seed (initial weights, data order)
    int clusterSize = 2;                  ///< stages per cluster
    int maxWindow = 0; ///< the run's cap on microbatches in flight (--max-window); 0: the nodes' default
    /// Extra arguments for node i (counted from 1), e.g. {"--cpu-percent", "50"}.
    std::map<int, std::vector<std::string>> nodeExtraArgs;
    /// A job file for the coordinator (--job): its model, optimizer and microbatch
    /// instead of the MLP's; steps, seed and averaging still come from here.
    std::filesystem::path jobFile;
    int64_t microbatch = 64; ///< the job's, for counting samples
    /// Called with every line a program prints ("coordinator", "node 2"), if set.
    std::function<void(const std::string &who, const std::string &line)> onLine;
    int clusters() const { return nodes / clusterSize; }
};

struct SwarmBenchOutcome
{
    double samplesPerSecond = 0; ///< of the whole swarm, from its first step to its last
    int window = 0;              ///< the root's last reported window
    double staleness = 0;
    double finalAccuracy = -1; ///< the worst cluster's
    /// The swarm's samples when its last cluster reached 85%, or at the first round whose
    /// consensus (the swarm's model, the same in every cluster) tested at 85%; -1: not.
    int64_t samplesToTarget = -1;
    uint64_t ringBytes = 0;    ///< ring values sent, all nodes
    double bytesPerSample = 0; ///< ringBytes over the samples the swarm trained
    uint64_t wireBytes = 0;    ///< everything the nodes sent to peers (their progress lines' figure)
    double firstLoss = -1;     ///< the first and last training loss a root reported; -1: none
    double lastLoss = -1;
};

constexpr int64_t kSwarmBenchBatch = 64;
/// The MLP's optimizer in every swarm benchmark and in its one-process baseline: SGD,
/// learning rate 0.05, momentum 0.8 (as resources/jobs/mlp.json). Momentum 0.9 had been
/// the setting until 2026-12-07; bench_staleness says why 0.8 (docs/benchmarks.md).
constexpr double kSwarmBenchLearningRate = 0.05;
constexpr double kSwarmBenchMomentum = 0.8;
constexpr double kSwarmBenchTarget = 0.85;

/// Where rookery-coordinator and rookery-node are: $ROOKERY_BIN_DIR, else the build
/// tree's app/ beside this benchmark's folder; empty: the launcher's own default.
std::filesystem::path benchProgramDirectory();

/// Runs the swarm for `steps` per cluster, each cluster's root testing every `evalEvery`
/// steps, in `work` (made and left for the caller to remove). Throws rookery::Error
/// when a node fails or nothing was trained.
SwarmBenchOutcome runSwarmBench(const SwarmBenchSpec &spec, int64_t steps, int64_t evalEvery,
                                const std::filesystem::path &work);

} // namespace rookery::bench
