// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace rookery::coord {

/// One training stage's speed, predicted by the plan and measured by its node.
struct StageSpeed
{
    std::string nodeId;
    /// Stages compared with each other: the same layers (ring peers). Different layers
    /// reach different shares of their predicted speed (a ReLU costs time and no FLOPs).
    std::string group;
    double predicted = 0; ///< samples/s the plan expects of its stage (compute only)
    double measured = 0;  ///< samples/s of the node's own time (NodeReport::ownSamplesPerSecond)
    double flops = 0;     ///< the stage's work per microbatch, forward and backward (0: unknown)
};

/// A stage persistently slower than the plan predicted, and by how much.
struct Straggler
{
    std::string nodeId;
    /// Its measured-over-predicted ratio over the swarm's usual ratio (below 1/threshold):
    /// what its capacity should be multiplied by.
    double factor = 1;
};

/// Finds stragglers: stages whose measured speed, relative to the plan's prediction, is
/// more than `threshold` times below the median ratio of the stages in their group (the
/// profile's GFLOP/s are not what torch reaches, so only the ratio against stages doing
/// the same work means anything), in `checks` consecutive checks. A stage with no peer
/// in its group (a single cluster, or clusters cut differently) is judged against its
/// own earlier speed instead: the median of its first `baselineChecks` ratios at these
/// layers. So a node that becomes slower (a lowered cap, a throttled CPU) is found
/// whatever the plan; one slow from the start, only when others hold its layers. A node
/// reported is left alone for `cooldown` (its stage is re-cut and needs time to show its
/// new speed) and its own usual is learnt again. Pure bookkeeping; the clock is the
/// caller's.
class StragglerWatch
{
public:
    using Clock = std::chrono::steady_clock;
    struct Settings
    {
        double threshold = 1.5;
        int checks = 3;
        std::chrono::milliseconds cooldown{60'000};
        size_t minimumStages = 2; ///< per group: with fewer measured stages there is no "usual"
        int baselineChecks = 3;   ///< a stage alone in its group: checks that learn its own usual
    };

    StragglerWatch() = default;
    explicit StragglerWatch(Settings settings)
        : m_settings(settings)
    { }

    /// One check over the stages measured now (others are ignored: paused, waiting, not
    /// yet measured; non-finite or non-positive figures count as not measured).
    std::vector<Straggler> check(const std::vector<StageSpeed> &speeds, Clock::time_point now);

private:
    Settings m_settings;
    std::map<std::string, int> m_slowChecks;               ///< consecutive slow checks per node
    std::map<std::string, Clock::time_point> m_quietUntil; ///< reported: left alone until then
    struct OwnHistory
    {
        std::string group;         ///< the layers it was learnt at
        std::vector<double> early; ///< its first ratios there
    };
    std::map<std::string, OwnHistory> m_own; ///< per node: for stages alone in their group
};

} // namespace rookery::coord
