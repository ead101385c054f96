// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <set>
#include <vector>

#include "engine/swarm/cluster_formation.h"

namespace rookery::swarm {

/// A membership change and who had to move for it.
struct Replan
{
    Clustering clustering;
    std::vector<size_t> moved; ///< volunteers whose cluster changed (not counting the one who left or joined)
};

/// Volunteer `gone` left. If its cluster can still hold the model nothing else moves
/// (the cluster's stages are re-cut). Otherwise the cluster is dissolved: its members,
/// fastest first, join the cluster where they raise the swarm's speed most, or form a
/// new cluster together with waiting volunteers, or wait. Cluster ids stay stable.
///
/// Thread safety: reentrant.
Replan planLeave(const std::vector<Capacity> &volunteers, std::vector<int> clusterOf, size_t gone,
                 const ModelDemand &demand);

/// Volunteer `joined` (clusterOf[joined] == -1) arrived. It joins the cluster where it
/// raises the swarm's speed most (or, if none has room, a new cluster formed with the
/// waiting volunteers when together they hold the model; else it waits). No one else
/// moves. Clusters in `closed` take no newcomer (their members keep their stages).
Replan planJoin(const std::vector<Capacity> &volunteers, std::vector<int> clusterOf, size_t joined,
                const ModelDemand &demand, const std::set<int> &closed = {});

} // namespace rookery::swarm
