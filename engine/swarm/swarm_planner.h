// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "engine/model/partitioner.h"
#include "engine/swarm/cluster_formation.h"

namespace rookery::swarm {

/// What is being trained, as far as planning is concerned.
struct PlanModel
{
    model::ModelSpec spec;
    int64_t microbatch = 64;
    double optimizerStateCopies = 1; ///< SGD with momentum 1, AdamW 2
    /// What a pipeline link through the relay (between two unreachable neighbours) may
    /// carry: the relay's cap per pair. 0: no cap, only each node's own bandwidth.
    double relayBytesPerSecond = 0;
};

/// A volunteer as the planner sees it.
struct PlanVolunteer
{
    std::string id;
    Capacity capacity;
    /// Its upload to other volunteers, by their id, measured on the links between them
    /// (bytes/s). Where a pipeline link has a figure it stands for that link instead of
    /// capacity.bandwidthBytesPerSecond, which is measured to the coordinator.
    std::map<std::string, double> uploadTo;
};

/// The holders of one layer range, one per cluster, in cluster order: they average
/// those layers' parameters over a ring. When every cluster cuts the model alike, the
/// ranges are the stages; otherwise a stage may take part in several rings.
struct RingPlan
{
    uint64_t id = 0; ///< (firstLayer << 32) | lastLayer: stable while the cut is
    size_t firstLayer = 0;
    size_t lastLayer = 0;
    std::vector<size_t> members; ///< volunteer indices
};

/// One cluster's pipeline: volunteers in stage order and their cut.
struct PipelinePlan
{
    std::vector<size_t> stages; ///< volunteer index per stage
    model::Partition partition;
    double samplesPerSecond = 0; ///< predicted
};

/// The whole swarm: clusters, their pipelines, the rings, and the data shards (cluster
/// c reads shard c of clusterCount()).
struct SwarmPlan
{
    Clustering clustering;
    std::vector<PipelinePlan> pipelines; ///< per cluster id; empty for a cluster with no members
    std::vector<RingPlan> rings;
    double predictedSamplesPerSecond = 0; ///< clusters x slowest cluster
};

/// What one cluster needs of its members, from the model cut for a single device.
ModelDemand demandOf(const PlanModel &model);

/// The best pipeline for these volunteers: the order of stages (all orders for up to
/// six members, else fastest first) and the cut for that order. A stage's upload is the
/// slower of its links to its neighbours: each the measured figure (uploadTo) where
/// there is one, else the volunteer's own bandwidth. Two unreachable
/// neighbours link through the relay: their link is charged the relay's bandwidth, and
/// of orders equally fast the one with the fewest relayed links wins, so an unreachable
/// volunteer goes next to reachable ones where it can.
PipelinePlan planPipeline(const PlanModel &model, const std::vector<PlanVolunteer> &volunteers,
                          const std::vector<size_t> &members);

/// Clusters (genetic search), then a pipeline per cluster, then rings. Deterministic
/// for a given seed. Throws rookery::Error when the volunteers cannot hold the model.
SwarmPlan planSwarm(const PlanModel &model, const std::vector<PlanVolunteer> &volunteers,
                    const FormationOptions &options = {});

/// Pipelines and rings for a clustering decided elsewhere (a re-plan). Only clusters in
/// `changed` are re-cut; the others keep `previous`'s pipelines.
SwarmPlan completePlan(const PlanModel &model, const std::vector<PlanVolunteer> &volunteers, Clustering clustering,
                       const SwarmPlan *previous = nullptr, const std::vector<int> &changed = {});

} // namespace rookery::swarm
