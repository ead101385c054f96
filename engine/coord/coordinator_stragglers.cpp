// SPDX-License-Identifier: GPL-3.0-or-later
// The coordinator's straggler check: measured stage speeds against the plan's, and a
// re-cut of the cluster around a stage that is persistently slower than predicted.
#include "engine/coord/coordinator_impl.h"

#include <cstdio>

#include "engine/common/log.h"

namespace rookery::coord {

using namespace coordinator_detail;

void Coordinator::Impl::checkStragglers(Clock::time_point now)
{
    if (settings.stragglerCheckInterval.count() <= 0 || now < nextStragglerCheck || !plan.isWorking())
        return;
    nextStragglerCheck = now + settings.stragglerCheckInterval;
    const auto &pipelines = plan.plan().pipelines;
    const auto &ids = plan.ids();
    std::map<std::string, std::pair<size_t, size_t>> seat; // node -> (cluster, stage)
    for (size_t c = 0; c < pipelines.size(); ++c)
        for (size_t k = 0; k < pipelines[c].stages.size(); ++k)
            seat[ids[pipelines[c].stages[k]]] = {c, k};
    std::vector<StageSpeed> speeds;
    for (const auto &n : registry->snapshot()) {
        const auto it = seat.find(n.nodeId);
        if (it == seat.end() || n.presence != Presence::Online || n.report.activity != NodeActivity::Training)
            continue;
        const auto &stages = pipelines[it->second.first].partition.stages;
        if (it->second.second >= stages.size() || stages[it->second.second].computeSeconds <= 0)
            continue;
        const double predicted = double(plan.model().microbatch) / stages[it->second.second].computeSeconds;
        const std::string layers = std::to_string(n.firstLayer) + "-" + std::to_string(n.lastLayer);
        speeds.push_back({n.nodeId, layers, predicted, n.report.ownSamplesPerSecond});
    }
    bool changed = false;
    for (const auto &s : stragglers.check(speeds, now)) {
        char factor[32];
        std::snprintf(factor, sizeof factor, "%.2f", s.factor);
        const PlanChange change = plan.recalibrate(s.nodeId, s.factor);
        if (change.changedClusters.empty()) {
            log::info(kArea, "straggler: node " + s.nodeId.substr(0, 12) + " runs at " + factor +
                                 " of the speed of the others holding its layers; no other cut of its "
                                 "cluster suits it better");
            continue;
        }
        changed = true;
        log::info(kArea, "straggler: node " + s.nodeId.substr(0, 12) + " runs at " + factor +
                             " of the speed of the others holding its layers; re-cutting cluster " +
                             std::to_string(change.changedClusters.front()) + " to move layers away from it");
    }
    if (!changed)
        return;
    publishPlacements();
    {
        std::lock_guard lock(summaryMutex);
        summary = summarize(plan);
        summary.rounds = ++planRounds;
    }
    ++statusVersion;
    store.savePlan(run.runId, plan.toJson());
}

} // namespace rookery::coord
