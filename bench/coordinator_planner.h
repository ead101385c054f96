// SPDX-License-Identifier: GPL-3.0-or-later
// bench_coordinator's planner figures, without a coordinator: the whole-swarm planner's
// time, and what placing volunteers as they arrive leaves against planning all at once.
#pragma once

#include <cstdint>

namespace rookery::bench {

/// Milliseconds planSwarm takes for `volunteers` of the bench's population (the MLP);
/// `clusters` receives how many clusters it formed.
double plannerMs(int volunteers, uint64_t seed, int *clusters);

struct PlanComparison
{
    int incrementalTraining = 0, globalTraining = 0;
    double incrementalPredicted = 0, globalPredicted = 0; ///< samples/s
};

/// The coordinator places arrivals one at a time (PlanState::apply), judging each by the
/// swarm's predicted speed: feasible clusters times the slowest, as rings pace every
/// cluster to the slowest. A volunteer whose cluster would be slower than the slowest
/// waits. This feeds `volunteers` of the population to a PlanState in rounds growing
/// threefold from 20, as a storm's do, then plans them all at once (planAll).
PlanComparison incrementalVsGlobal(int volunteers, uint64_t seed);

} // namespace rookery::bench
