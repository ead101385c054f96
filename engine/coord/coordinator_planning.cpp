// SPDX-License-Identifier: GPL-3.0-or-later
// The coordinator's planning rounds: membership changes batched into one re-plan, a
// first plan once the volunteers can hold the model, and the assignments that follow.
#include "engine/coord/coordinator_impl.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <set>
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
    // Nodes still being checked are arrivals to come: they join the planner with their
    // verdict. On a loaded coordinator verdicts can pause for seconds mid-ramp (a planning
    // round of thousands of joins took 8 s at 10,000 nodes), which ended the storm twice
    // in one ramp when only joins counted. (Asked before the inbox lock: the registry's
    // hooks take that lock under the registry's.)
    const bool checking = settings.stormHoldMax.count() > 0 && registry->checkingCount() > 0;
    {
        std::lock_guard lock(inboxMutex);
        size_t joins = 0;
        bool leaves = false;
        for (const auto &[id, p] : pending)
            p.leave ? leaves = true : ++joins;
        const bool takeJoins = joinsDue(now, joins);
        const bool firstDue = !plan.isWorking() && holdSince && now - *holdSince >= settings.firstPlanDelay;
        // A storm's growth is held back from placed nodes while joins wait for their
        // batch, came within stormSettle or are still being checked, for stormHoldMax at
        // most; then a round tells all.
        const bool joinsWait = joins > 0 && !takeJoins && !firstDue;
        hold = (joinsWait || checking || now - lastArrival < settings.stormSettle) &&
               settings.stormHoldMax.count() > 0 && (!heldSince || now - *heldSince < settings.stormHoldMax);
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

void Coordinator::Impl::takeMeasuredLinks()
{
    for (auto &[id, uploadTo] : registry->takeMeasuredLinks())
        plan.setMeasuredLinks(id, std::move(uploadTo));
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
    // In a storm (more than one arrival, or growth already held back), clusters whose
    // members were told their placement take no newcomer: a re-cut would move them, and
    // close every held ring they sit in, re-seating its members, once a round. A lone
    // arrival may still join one.
    std::set<std::string> placed;
    if (hold && (heldSince || joins.size() > 1))
        for (const auto &[id, a] : published)
            if (a.isTraining())
                placed.insert(placed.end(), id);
    // A cluster that trained the run to its end leaves the plan whole as its members go.
    std::set<std::string> finished;
    if (!leaves.empty() && run.totalSteps > 0)
        finished = registry->reachedStep(run.totalSteps);
    PlanChange change = plan.apply(leaves, joins, placed, finished);
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
    const Published told = publishPlacements(now, hold);
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
                             std::to_string(int64_t(ms)) + " ms); pushed " + std::to_string(told.pushed) +
                             (hold ? ", held back from " + std::to_string(told.held) : ""));
}

Coordinator::Impl::Published Coordinator::Impl::publishPlacements(Clock::time_point now, bool hold)
{
    Published told;
    auto placements = plan.placements();
    skipAway(placements, registry->away());
    const auto addresses = registry->addresses();
    auto fresh = buildAssignments(placements, addresses, published);
    if (hold)
        told.held = holdStormGrowth(fresh, published, addresses);
    markUnreachable(fresh, registry->unreachable());
    std::map<std::string, Assignment> changed;
    for (const auto &[id, a] : fresh)
        if (const auto it = published.find(id);
            it == published.end() || !it->second.samePlacement(a) || !it->second.sameReachability(a))
            changed.emplace(id, a);
    published = std::move(fresh);
    // A storm's newcomers left waiting hear their checks' verdicts once it is over.
    for (const auto &id : registry->publish(changed, hold)) {
        published.erase(id);
        changed.erase(id);
        ++told.held;
    }
    if (!hold)
        heldSince.reset();
    else if (told.held > 0 && !heldSince)
        heldSince = now; // the storm's growth is told all at once when it ends
    const size_t pushed = told.pushed = changed.size();
    // Every push is a whole assignment (rings with one member per cluster), encoded here
    // and freed on a network thread once written: after a round that pushed to many
    // nodes, the worker hands the freed pages back (trimMemory) rather than keep the peak.
    if (pushed >= 64)
        trimAt = Clock::now() + std::chrono::seconds(2);
    return told;
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
