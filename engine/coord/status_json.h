// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/coord/assignment.h"
#include "engine/coord/node_registry.h"
#include "engine/coord/plan_state.h"
#include "engine/coord/status_view.h"
#include "engine/net/listener.h"

namespace rookery::coord {

/// The plan as the status API shows it; rebuilt by the planner after every round.
struct PlanSummary
{
    struct Stage
    {
        std::string nodeId;
        size_t firstLayer = 0;
        size_t lastLayer = 0;
        double predictedSeconds = 0; ///< per microbatch
        uint64_t memoryBytes = 0;
    };
    struct Cluster
    {
        int id = 0;
        bool feasible = false;
        double predictedSamplesPerSecond = 0;
        std::vector<Stage> stages;        ///< in pipeline order; empty when it waits
        std::vector<std::string> members; ///< every member, also those of a waiting cluster
    };
    struct Ring
    {
        uint64_t id = 0;
        size_t firstLayer = 0;
        size_t lastLayer = 0;
        std::vector<std::string> members;
    };
    bool hasPlan = false;
    double predictedSamplesPerSecond = 0;
    std::vector<Cluster> clusters;
    std::vector<Ring> rings;
    uint64_t rounds = 0;
    double lastRoundMs = 0;
};

PlanSummary summarize(const PlanState &state);

/// Everything GET /v1/status reports.
struct StatusInputs
{
    std::string swarm;
    std::string address;
    std::string jobName; ///< the job file's name; empty: the run came from flags
    RunConfig run;
    PlanSummary plan;
    std::vector<NodeStatus> nodes;
    RegistryCounters counters;
    net::ListenerCounters listener; ///< connections refused at the door
    uint64_t relayedBytes = 0;      ///< through this coordinator's relay, both ways
    size_t storeQueuedJobs = 0;     ///< database writes waiting (CoordinatorStore, bounded)
    uint64_t storeDroppedMetrics = 0;
    uint64_t storeHeldBack = 0;
    int64_t uptimeMs = 0;
    int64_t timeMs = 0;
};

/// The status document (docs/coordinator-api.md, "GET /v1/status").
std::string statusJson(const StatusInputs &inputs, StatusView view);

} // namespace rookery::coord
