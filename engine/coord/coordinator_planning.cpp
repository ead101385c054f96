// SPDX-License-Identifier: GPL-3.0-or-later
// The coordinator's planning rounds: membership changes batched into one re-plan, a
// first plan once the volunteers can hold the model, and the assignments that follow.
#include "engine/coord/coordinator_impl.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/log.h"
#include "engine/coord/assignment_builder.h"
#include "engine/coord/storm_hold.h"

namespace rookery::coord {

using namespace coordinator_detail;

bool Coordinator::Impl::joinsDue(Clock::time_point now, size_t joins) const
{
    if (joins == 0)
        return false;
    // Before a plan works, joins only add waiting volunteers: cheap, and pushed to nobody.
    if (!plan.isWorking())
        return true;
    if (double(joins) >= settings.joinGrowth * double(std::max<size_t>(plan.size(), 1)))
        return true; // the swarm would grow that much: worth a round of its own
    return now - lastArrival >= settings.joinSettle || (firstHeldJoin && now - *firstHeldJoin >= settings.joinMaxWait);
}

void Coordinator::Impl::maybePlan(Clock::time_point now)
{
    std::map<std::string, Pending> events;
    bool hold = false, full = false;
    {
        std::lock_guard lock(inboxMutex);
        size_t joins = 0;
        bool leaves = false;
        for (const auto &[id, p] : pending)
            p.leave ? leaves = true : ++joins;
        const bool takeJoins = joinsDue(now, joins);
        const bool firstDue = !plan.isWorking() && holdSince && now - *holdSince >= settings.firstPlanDelay;
        // A storm's growth is held back from placed nodes while joins wait for their
        // batch or came within stormSettle, for stormHoldMax at most; then a round tells all.
        const bool joinsWait = joins > 0 && !takeJoins && !firstDue;
        hold = (joinsWait || now - lastArrival < settings.stormSettle) && settings.stormHoldMax.count() > 0 &&
               (!heldSince || now - *heldSince < settings.stormHoldMax);
        if (heldSince && !hold)
            republish = true;
        const bool due = (leaves || takeJoins || republish || fullReplan) && now - lastRound >= settings.planInterval;
        if (!due && !firstDue)
            return;
        if (takeJoins || firstDue) {
            events = std::exchange(pending, {});
            firstHeldJoin.reset();
        } else {
            // Leaves (and a leaver's re-join) now; plain arrivals wait for their batch.
            for (auto it = pending.begin(); it != pending.end();)
                if (it->second.leave) {
                    events.insert(pending.extract(it++));
                } else {
                    ++it;
                }
        }
        republish = false;
        full = std::exchange(fullReplan, false);
    }
    lastRound = now;
    round(now, std::move(events), hold, full);
}

void Coordinator::Impl::round(Clock::time_point now, std::map<std::string, Pending> events, bool hold, bool full)
{
    const auto started = Clock::now();
    std::vector<std::string> leaves;
    std::vector<std::pair<std::string, swarm::Capacity>> joins;
    for (const auto &[id, p] : events) {
        if (p.leave)
            leaves.push_back(id);
        if (p.join)
            joins.emplace_back(id, p.capacity);
    }
    PlanChange change = plan.apply(leaves, joins);
    const bool hadPlan = plan.hasPlan();
    // A first plan (or a fresh one when no cluster works any more) once the volunteers
    // can hold the model and the crowd had time to arrive.
    if (!plan.isWorking() && plan.size() > 0 && plan.canHoldModel()) {
        if (!holdSince)
            holdSince = now;
        const bool everyoneHere = settings.expectNodes > 0 && plan.size() >= size_t(settings.expectNodes);
        // Who can be dialled decides who dials whom: a first plan made before the checks
        // end sends nodes dialling addresses behind NAT until the verdicts re-publish.
        const bool verdictsIn = registry->checkingCount() == 0 ||
                                now - *holdSince >= settings.reachabilityTimeout + std::chrono::seconds(2);
        if ((now - *holdSince >= settings.firstPlanDelay || everyoneHere) && verdictsIn)
            full = true;
    } else if (!plan.isWorking()) {
        holdSince.reset();
    }
    if (full) {
        try {
            change = plan.planAll();
        } catch (const Error &e) {
            log::warning(kArea, std::string("cannot plan yet: ") + e.what());
            holdSince = now; // try again after another delay
        }
    }
    publishPlacements(now, hold);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    {
        std::lock_guard lock(summaryMutex);
        summary = summarize(plan);
        summary.rounds = ++planRounds;
        summary.lastRoundMs = ms;
    }
    ++statusVersion;
    store.savePlan(run.runId, plan.toJson());
    if (plan.isWorking())
        log::info(kArea, std::string(change.replanned ? (hadPlan ? "re-planned everyone" : "first plan") : "re-plan") +
                             ": " + std::to_string(joins.size()) + " joined, " + std::to_string(leaves.size()) +
                             " left, " + std::to_string(change.moved.size()) + " moved; " +
                             std::to_string(summary.clusters.size()) + " clusters, predicted " +
                             format::count(int64_t(plan.plan().predictedSamplesPerSecond)) + " samples/s (" +
                             std::to_string(int64_t(ms)) + " ms)");
}

void Coordinator::Impl::publishPlacements(Clock::time_point now, bool hold)
{
    auto placements = plan.placements();
    skipAway(placements, registry->away());
    const auto addresses = registry->addresses();
    auto fresh = buildAssignments(placements, addresses, published);
    if (!hold) {
        heldSince.reset();
    } else if (holdStormGrowth(fresh, published, addresses) > 0 && !heldSince) {
        heldSince = now;
    }
    markUnreachable(fresh, registry->unreachable());
    std::map<std::string, Assignment> changed;
    for (const auto &[id, a] : fresh)
        if (const auto it = published.find(id);
            it == published.end() || !it->second.samePlacement(a) || !it->second.sameReachability(a))
            changed.emplace(id, a);
    published = std::move(fresh);
    const size_t pushed = changed.size();
    registry->publish(changed);
    // Every push is a whole assignment (rings with one member per cluster), encoded here
    // and freed on a network thread once written: after a round that pushed to many
    // nodes, the worker hands the freed pages back (trimMemory) rather than keep the peak.
    if (pushed >= 64)
        trimAt = Clock::now() + std::chrono::seconds(2);
}

void Coordinator::Impl::trimMemory(Clock::time_point now)
{
    if (!trimAt || now < *trimAt)
        return;
    trimAt.reset();
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}
} // namespace rookery::coord
