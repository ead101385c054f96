// SPDX-License-Identifier: GPL-3.0-or-later
// The coordinator's straggler check: measured stage speeds against the plan's, and a
// re-cut of the cluster around a stage that is persistently slower than predicted; and
// the claim check: a stage far slower than its own node's claim predicts.
#include "engine/coord/coordinator_impl.h"

#include <algorithm>
#include <cstdio>

#include "engine/common/log.h"

namespace rookery::coord {

using namespace coordinator_detail;

std::vector<StageSpeed> Coordinator::Impl::stageSpeeds() const
{
    std::vector<StageSpeed> speeds;
    if (!plan.isWorking())
        return speeds;
    const auto &pipelines = plan.plan().pipelines;
    const auto &ids = plan.ids();
    std::map<std::string, std::pair<size_t, size_t>> seat; // node -> (cluster, stage)
    for (size_t c = 0; c < pipelines.size(); ++c)
        for (size_t k = 0; k < pipelines[c].stages.size(); ++k)
            seat[ids[pipelines[c].stages[k]]] = {c, k};
    for (const auto &n : registry->snapshot()) {
        const auto it = seat.find(n.nodeId);
        if (it == seat.end() || n.presence != Presence::Online || n.report.activity != NodeActivity::Training)
            continue;
        const auto &stages = pipelines[it->second.first].partition.stages;
        if (it->second.second >= stages.size() || stages[it->second.second].computeSeconds <= 0)
            continue;
        const double seconds = stages[it->second.second].computeSeconds; // its work at its claimed GFLOP/s
        const double predicted = double(plan.model().microbatch) / seconds;
        const size_t volunteer = pipelines[it->second.first].stages[it->second.second];
        const double flops = seconds * plan.capacities()[volunteer].gflops * 1e9;
        const std::string layers = std::to_string(n.firstLayer) + "-" + std::to_string(n.lastLayer);
        speeds.push_back({n.nodeId, layers, predicted, n.report.ownSamplesPerSecond, flops});
    }
    return speeds;
}

void Coordinator::Impl::checkClaims(Clock::time_point now)
{
    if (settings.claimCheckInterval.count() <= 0 || now < nextClaimCheck)
        return;
    nextClaimCheck = now + settings.claimCheckInterval;
    const auto speeds = stageSpeeds();
    for (const auto &s : speeds)
        if (s.measured > 0 && s.predicted > 0 && claimNoted.insert(s.nodeId).second) {
            char line[160];
            std::snprintf(line, sizeof line,
                          " trains at %.0f samples/s, %.3g of the %.0f its claimed compute predicts (%.3g FLOP per "
                          "microbatch)",
                          s.measured, s.measured / s.predicted, s.predicted, s.flops);
            log::info(kArea, "node " + s.nodeId.substr(0, 12) + line);
        }
    for (const auto &o : claims.check(speeds)) {
        char figures[160];
        std::snprintf(figures, sizeof figures,
                      "its stage trains at %.0f samples/s, 1/%.0f of the %.0f its claimed compute predicts (%d "
                      "checks running)",
                      o.measured, o.predicted / o.measured, o.predicted, claims.settings().checks);
        // Quarantined like a node its peers report: re-planned away, its key banned.
        registry->quarantine(o.nodeId, std::string("it claimed compute it does not have: ") + figures);
    }
}

void Coordinator::Impl::checkStragglers(Clock::time_point now)
{
    if (settings.stragglerCheckInterval.count() <= 0 || now < nextStragglerCheck || !plan.isWorking())
        return;
    nextStragglerCheck = now + settings.stragglerCheckInterval;
    if (!severalClustersWork())
        return;
    const auto speeds = stageSpeeds();
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
        // A warning, so that an operator watching the console sees the swarm change.
        log::warning(kArea, "straggler: node " + s.nodeId.substr(0, 12) + " runs at " + factor +
                                " of the speed of the others holding its layers; re-cutting cluster " +
                                std::to_string(change.changedClusters.front()) + " to move layers away from it");
    }
    if (changed)
        publishRecut(now);
}

// A lone cluster is not re-cut: layers a re-cut moves would be asked of the node that
// gave them up, which serves only its new range. With two or more, every layer also
// lives in another cluster, whose holder is named instead.
bool Coordinator::Impl::severalClustersWork() const
{
    const auto &pipelines = plan.plan().pipelines;
    return plan.isWorking() &&
           std::count_if(pipelines.begin(), pipelines.end(), [](const auto &p) { return !p.stages.empty(); }) >= 2;
}

void Coordinator::Impl::publishRecut(Clock::time_point now)
{
    publishPlacements(now, false);
    {
        std::lock_guard lock(summaryMutex);
        summary = summarize(plan);
        summary.rounds = ++planRounds;
    }
    ++statusVersion;
    store.savePlan(run.runId, plan.toJson());
}

void Coordinator::Impl::checkOffers()
{
    for (const auto &[id, scale] : registry->takeOfferScales())
        offerPending[id] = scale;
    if (offerPending.empty() || !severalClustersWork()) // kept until clusters can be re-cut
        return;
    bool changed = false;
    for (const auto &[id, scale] : std::exchange(offerPending, {})) {
        const PlanChange change = plan.setComputeOfferScale(id, scale);
        if (change.changedClusters.empty())
            continue;
        changed = true;
        char text[200];
        std::snprintf(text, sizeof text,
                      "'s CPU caps now offer %.2f of the compute it registered with; re-cutting cluster %d for it",
                      scale, change.changedClusters.front());
        log::warning(kArea, "node " + id.substr(0, 12) + text);
    }
    if (changed)
        publishRecut(Clock::now());
}

} // namespace rookery::coord
