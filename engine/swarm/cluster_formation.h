// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rookery::swarm {

/// What the planner knows of one volunteer: measured, not typed in.
struct Capacity
{
    double gflops = 0;       ///< measured fp32 matmul GFLOP/s with the threads it gives us
    int64_t memoryBytes = 0; ///< what it lets us use
    double bandwidthBytesPerSecond = 0;
    /// Peers can dial it (the coordinator's check). Two neighbours that both cannot are
    /// linked through the relay.
    bool reachable = true;
};

/// What the model asks of a cluster (one pipeline holding the whole model).
struct ModelDemand
{
    int64_t memoryBytes = 0;           ///< parameters + gradients + optimizer state + activations in flight
    double trainFlopsPerSample = 0;    ///< forward + backward
    double boundaryBytesPerSample = 0; ///< activation bytes crossing a stage boundary, per sample
    int maxStages = 1;                 ///< a pipeline cannot have more stages than this
};

/// A grouping of volunteers into clusters, each of which runs the whole model.
struct Clustering
{
    std::vector<int> clusterOf;       ///< per volunteer; -1 = waiting, in no cluster
    std::vector<double> clusterSpeed; ///< predicted samples/s per cluster (0 if it cannot hold the model)
    std::vector<bool> clusterFeasible;
    double swarmSpeed = 0; ///< clusters x the slowest feasible cluster (they average in step)
    int clusterCount() const { return int(clusterSpeed.size()); }
    /// Largest over smallest feasible cluster speed; 1 is perfect balance.
    double imbalance() const;
};

struct FormationOptions
{
    uint64_t seed = 1;
    int population = 40;
    int generations = 120;
    /// Volunteers per cluster, fixed by the operator (0: the search decides). With a
    /// fixed size the volunteers are dealt, fastest first and back and forth, into
    /// max(1, n / size) clusters, so the leftovers make some clusters one larger.
    int clusterSize = 0;
};

/// Predicted samples/s of one cluster: its compute shared out in proportion to speed,
/// or its slowest link, whichever binds. 0 when its memory cannot hold the model.
double clusterSpeed(const std::vector<Capacity> &members, const ModelDemand &demand);

/// Each cluster's volunteers (indices, in index order), for clusters 0 .. the largest id
/// in `clusterOf`; volunteers in no cluster (negative ids) are left out.
std::vector<std::vector<size_t>> membersByCluster(const std::vector<int> &clusterOf);

/// Scores a clustering (fills speeds, feasibility and swarm speed). Cluster ids are
/// kept as given; an id with no members counts as an empty, infeasible cluster.
Clustering evaluate(const std::vector<Capacity> &volunteers, std::vector<int> clusterOf, const ModelDemand &demand);

/// Ravnest's cluster formation, driven by measured compute and bandwidth: a genetic
/// algorithm over assignments of volunteers to clusters, in which every cluster must
/// hold the whole model in memory and the swarm's speed (clusters x slowest cluster)
/// is maximised, which rewards balanced clusters. Seeded with balanced greedy
/// groupings; deterministic for a given seed.
///
/// Thread safety: reentrant.
Clustering formClusters(const std::vector<Capacity> &volunteers, const ModelDemand &demand,
                        const FormationOptions &options = {});

/// Baseline: volunteers dealt into `clusters` clusters at random (seeded).
Clustering randomClustering(const std::vector<Capacity> &volunteers, int clusters, const ModelDemand &demand,
                            uint64_t seed);

} // namespace rookery::swarm
