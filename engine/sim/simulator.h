// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/common/value_precision.h"
#include "engine/model/model_spec.h"
#include "engine/net/wire_message.h"
#include "engine/sim/population.h"

namespace rookery::coord {
class PlanState;
}

namespace rookery::sim {

/// The job and the coordinator's rules. Membership timings default to the real
/// coordinator's (coord::RegistryConfig); the rest are documented in docs/scale.md.
struct SimConfig
{
    std::string model = "mlp"; ///< a model of the zoo, by name (ignored when modelSpec has layers)
    /// A model given layer by layer, as a job file gives it (applyJob); empty: `model`.
    model::ModelSpec modelSpec;
    int64_t microbatch = 64;
    double optimizerStateCopies = 1;
    int clusterSize = 0; ///< 0: the planner's search decides
    uint64_t seed = 1;
    int averagingInterval = 10; ///< optimizer steps (one microbatch each) between ring averages
    /// The roots' cap on microbatches in flight (a job's max_window); 0: the nodes'
    /// default (train::kDefaultMaxWindow).
    int maxWindow = 0;
    /// How ring chunks travel: the nodes' --ring-compression, int8 by default as theirs
    /// (a ring's first round, in float32, is not modelled).
    ValuePrecision ringPrecision = ValuePrecision::Int8;
    /// How activations and gradients travel between stages: the nodes' --peer-compression,
    /// bf16 by default as theirs (2 bytes a value; fp16 alike, float32 4).
    net::Compression peerCompression = net::Compression::Bf16;
    /// A ring member's own work in a round per byte of the weights it averages (they
    /// are flattened, copied, checked for plausibility, summed and written back), in
    /// FLOP-equivalents like Network::transportFlopsPerByte. 0: not modelled.
    double ringFlopsPerByte = 0;
    double hours = 24;
    /// Independent swarms, one coordinator each; volunteer i belongs to swarm i mod n.
    /// 1 is the real deployment; more keeps the planner's per-join cost (which grows
    /// with the swarm) within a simulation's budget at 10,000 volunteers.
    int coordinators = 1;
    double heartbeatSeconds = -1;        ///< -1: the coordinator's default
    double heartbeatTimeoutSeconds = -1; ///< -1: the coordinator's default
    double rejoinGraceSeconds = -1;      ///< -1: the coordinator's default
    double planRoundSeconds = 0.25;      ///< planning rounds at most this often
    double firstPlanDelaySeconds = 3;
    double restartSeconds = 5;  ///< a pipeline restarting after a change: reconnect, restore (our assumption)
    double bucketSeconds = 600; ///< resolution of the time series
};

/// One bucket of the time series.
struct TimePoint
{
    double hours = 0; ///< end of the bucket
    double samplesPerSecond = 0;
    double coordinatorMessagesPerSecond = 0;
    double online = 0;   ///< volunteers online, averaged over the bucket
    int training = 0;    ///< volunteers in a pipeline at the end of the bucket
    int clusters = 0;    ///< pipelines at the end of the bucket
    int64_t replans = 0; ///< planning rounds that changed the plan, in the bucket
};

struct ClusterSummary
{
    int coordinator = 0;
    int members = 0;
    double samplesPerSecond = 0; ///< when running, averaging included
};

struct SimResult
{
    std::vector<TimePoint> series;
    std::vector<double> utilisation;      ///< per volunteer that held a stage: compute busy / time held
    std::vector<ClusterSummary> clusters; ///< at the end
    double simulatedSeconds = 0;
    double samples = 0;
    double samplesLostInFlight = 0;   ///< microbatches in flight when a pipeline broke
    double stalledClusterSeconds = 0; ///< pipelines waiting on a paused, lost or restarting member
    double bytesWithinClusters = 0;   ///< activations and gradients between stages
    double bytesAcrossClusters = 0;   ///< ring averaging
    double bytesMoved = 0;            ///< parameters fetched by nodes taking over layers
    int64_t replans = 0;
    int64_t joins = 0;
    int64_t leaves = 0;
    int64_t layersMoved = 0;
    int64_t assignmentPushes = 0;
    double coordinatorMessages = 0;
    double plannerWallSeconds = 0;
    double plannerWorstRoundSeconds = 0;
    std::vector<double> replanTimes; ///< simulated seconds of every round that changed the plan
    int64_t events = 0;
};

/// The discrete-event simulator: volunteers come and go as their population says; the
/// coordinator's membership rules turn silence into leaves after the grace; the real
/// planner (coord::PlanState over engine/swarm) makes every plan; pipelines and rings
/// are timed with timing.h. It simulates time, compute and links; it trains nothing.
///
/// Thread safety: none; one owner.
class Simulator
{
public:
    Simulator(Population population, SimConfig config);
    ~Simulator();

    /// Runs to the end. `progress` (may be empty) gets the simulated fraction done, at
    /// most a few hundred times.
    SimResult run(const std::function<void(double)> &progress = {});

    /// The configuration with the coordinator's defaults filled in.
    const SimConfig &config() const;
    /// The planner state of coordinator `index` (tests compare it with the planner).
    const coord::PlanState &planState(int index) const;
    /// Node id of volunteer i as the planner knows it: "v<i>".
    static std::string nodeId(size_t volunteer);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace rookery::sim
