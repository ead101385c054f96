// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "engine/sim/population.h"
#include "engine/sim/simulator.h"

namespace rookery::sim {

/// The settings a sweep tries: every cluster size with every averaging interval. The
/// interval is also the outer optimizer's H (the coordinator applies the averaged
/// difference with its outer learning rate and momentum once per interval), so one axis
/// covers both.
struct SweepAxes
{
    std::vector<int> clusterSizes;       ///< 0: the planner's search decides
    std::vector<int> averagingIntervals; ///< optimizer steps between ring averages (H)
};

/// One simulated setting and what it gave.
struct SweepPoint
{
    int clusterSize = 0;
    int averagingInterval = 0;
    double samplesPerSecond = 0;      ///< over the simulated time
    double bytesAcrossPerSample = 0;  ///< ring averaging
    double bytesWithinPerSample = 0;  ///< activations and gradients between stages
    double stalledClusterSeconds = 0; ///< pipelines waiting on a member
    double utilisationMedian = 0;     ///< compute busy over time holding a stage
    int64_t replans = 0;
};

struct SweepResult
{
    std::vector<SweepPoint> points; ///< in the order tried: cluster sizes outer, intervals inner
    /// The recommendation (an index into points): among the settings within `tolerance`
    /// of the highest samples/s, the one with the smallest interval (the simulator
    /// trains nothing, so it cannot see what a longer interval costs in accuracy:
    /// among near-equals, average most often), then the smallest cluster size.
    size_t best = 0;
    double tolerance = 0.05;
};

/// Runs the simulator once per setting, each on the same population and `base`
/// configuration otherwise. `progress` (may be empty) gets the fraction of the whole
/// sweep done. Throws Error when an axis is empty or holds a value out of range.
SweepResult runSweep(const Population &population, const SimConfig &base, const SweepAxes &axes,
                     const std::function<void(double)> &progress = {});

/// Index of the recommended point, as SweepResult::best says.
size_t recommend(const std::vector<SweepPoint> &points, double tolerance);

/// The sweep as JSON: every point, and the recommendation with why.
std::string sweepJson(const SweepResult &result, const SimConfig &base, size_t volunteers, double wallSeconds);

/// "1,2,4" -> {1, 2, 4}; throws Error naming `what` on anything else (empty, not a
/// whole number, out of [low, high]).
std::vector<int> parseIntList(const std::string &text, const std::string &what, int low, int high);

} // namespace rookery::sim
