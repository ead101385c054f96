// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/coord/straggler_watch.h"

namespace rookery::coord {

/// A capacity claim that the node's own training belies.
struct Overclaim
{
    std::string nodeId;
    double predicted = 0; ///< samples/s its claim predicts for its stage
    double measured = 0;  ///< samples/s of its own time
};

/// Finds volunteers that claim far more compute than they have: a stage whose measured
/// speed is under 1/`ratio` of what its claimed GFLOP/s predict, in `checks`
/// consecutive checks. Unlike StragglerWatch it judges each stage alone, against its own
/// claim: honest stages reach a twentieth or more of it even on a loaded machine (the
/// claim is the profile's GEMM speed over all its cores, and the measured
/// speed counts only the stage's own time, not waits for its neighbours), so a stage
/// `ratio` times below its claim claimed what it does not have. Only stages with at least
/// `minimumFlops` of work per microbatch are judged: a stage of a few small layers
/// spends its time on fixed costs per microbatch, not arithmetic, and shows nothing of
/// the node's compute (one holding the last 10-unit layer reached 0.09 of its claim
/// here). An overclaiming node is given much work, so it is judged. Pure bookkeeping.
class ClaimWatch
{
public:
    struct Settings
    {
        double ratio = 1000;
        int checks = 3;
        double minimumFlops = 2e7; ///< 0.2 ms at 100 GFLOP/s
    };

    ClaimWatch() = default;
    explicit ClaimWatch(Settings settings)
        : m_settings(settings)
    { }

    /// One check over the stages measured now (others are ignored, and their runs of
    /// low checks end; non-finite or non-positive figures count as not measured). A node
    /// is reported once: it is expected to leave the plan.
    std::vector<Overclaim> check(const std::vector<StageSpeed> &speeds);
    const Settings &settings() const { return m_settings; }

private:
    Settings m_settings;
    std::map<std::string, int> m_lowChecks; ///< consecutive checks under the bound, per node
    std::set<std::string> m_reported;
};

} // namespace rookery::coord
