// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/coord/assignment.h"
#include "engine/coord/plan_state.h"

namespace rookery::coord {

/// Turns the planner's placements into the assignments nodes receive: node ids get the
/// addresses nodes registered, clusters their data shard, and a node that takes over
/// layers it did not hold in `previous` is told where to fetch them (`weightsFrom`):
/// the node that still serves most of those layers (held them before and holds them
/// now, so its live stage answers), then the one that held most of them, preferring
/// its own cluster, then the smaller node id. Versions are left at 0 for the caller to
/// number.
///
/// Thread safety: reentrant.
std::map<std::string, Assignment> buildAssignments(const std::vector<Placement> &placements,
                                                   const std::map<std::string, std::string> &addresses,
                                                   const std::map<std::string, Assignment> &previous);

/// Marks the nodes peers cannot dial (`unreachable`, by id), wherever an assignment
/// names them and on their own assignments: each pair of peers then agrees on who dials.
void markUnreachable(std::map<std::string, Assignment> &assignments, const std::set<std::string> &unreachable);

/// Rings without the clusters that cannot train for now: a cluster with a member in
/// `away` (lost inside the grace, or paused) is halted, so its members leave every
/// ring, and each of them keeps a ring of itself alone, until it is back. The others
/// average among themselves meanwhile rather than wait out a timeout each round. Runs on
/// the placements, before buildAssignments, which tells each node only its neighbours.
void skipAway(std::vector<Placement> &placements, const std::set<std::string> &away);

} // namespace rookery::coord
