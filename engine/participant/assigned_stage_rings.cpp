// SPDX-License-Identifier: GPL-3.0-or-later
// AssignedStage's averaging: a round of every ring, on the stage thread or beside it, what
// it changed applied to weights that trained on, the consensus its tests measure, and
// ring members that change between rounds.
#include <algorithm>

#include "engine/common/error.h"
#include "engine/participant/assigned_stage_state.h"
#include "engine/participant/peer_complaints.h"
#include "engine/participant/peer_mesh.h"
#include "engine/swarm/outer_optimizer.h"
#include "engine/swarm/ring_averaging.h"

namespace rookery::participant {

std::vector<AssignedStage::Impl::RingChange> AssignedStage::Impl::averageRingsOf(std::vector<NamedTensor> snapshot,
                                                                                 int64_t round)
{
    std::vector<RingJob> jobs;
    for (auto &ring : rings) {
        if (ring.alone() || ring.previousFinished)
            continue;
        if (!mesh.isUp(ring.next) || !mesh.isUp(ring.previous)) {
            std::lock_guard lock(mutex);
            ++progress.ringSkipped;
            continue;
        }
        RingJob job;
        job.ring = &ring;
        for (const auto &p : snapshot)
            if (const size_t l = swarm::layerOfParameter(p.name); l >= ring.ref.firstLayer && l < ring.ref.lastLayer)
                job.parameters.push_back(p);
        jobs.push_back(std::move(job));
    }
    snapshot.clear();
    averageAtOnce(jobs, round, config.ringPrecision);

    std::vector<RingChange> changes;
    for (auto &job : jobs) {
        StageRing &ring = *job.ring;
        RingChange change{std::move(job.parameters), {}};
        auto outcome = std::move(job.outcome);
        if (outcome.result.rejected) { // poison stops here; the previous member sent it
            if (config.complaints)
                config.complaints->refused(ring.previous);
            std::lock_guard lock(mutex);
            ++progress.ringRejected;
            log::warning("swarm", "averaging layers " + std::to_string(ring.ref.firstLayer) + "-" +
                                      std::to_string(ring.ref.lastLayer - 1) + ": " + outcome.result.rejection +
                                      (outcome.result.complete ? "; used this stage's own values in their place" : "") +
                                      " (from peer " + ring.previous.substr(0, 12) + ")");
        }
        if (!outcome.result.complete) {
            ring.outer.reset(); // the members now differ: the next round starts from its average
            std::lock_guard lock(mutex);
            ++progress.ringSkipped;
            const std::string layers =
                std::to_string(ring.ref.firstLayer) + "-" + std::to_string(ring.ref.lastLayer - 1);
            if (outcome.result.previousFinished) { // expected near the end: said once, not warned of
                ring.previousFinished = true;
                log::info("swarm", "averaging layers " + layers + ": peer " + ring.previous.substr(0, 12) +
                                       " has trained to the end; this stage trains its last steps without that ring");
            } else {
                log::warning("swarm", "averaging layers " + layers + " skipped: " + outcome.result.error);
            }
            continue;
        }
        // Plain averaging too: the step keeps the average as the anchor of the next round.
        const auto stepped = ring.outer.step(swarm::flattenParameters(outcome.parameters));
        swarm::unflattenParameters(stepped, outcome.parameters);
        change.after = std::move(outcome.parameters);
        changes.push_back(std::move(change));
        std::lock_guard lock(mutex);
        ++progress.ringRounds;
    }
    return changes;
}

void AssignedStage::Impl::applyChanges(const std::vector<RingChange> &changes)
{
    if (changes.empty())
        return;
    const auto current = runtime->parameters();
    for (const auto &c : changes) {
        try {
            runtime->setParameters(swarm::movedByAveraging(current, c.before, c.after));
        } catch (const Error &e) {
            log::warning("swarm", std::string("an averaging round was not applied: ") + e.what());
        }
    }
}

// The weights a round agreed on are what the stage's tests measure until the next
// (StageRuntime::setConsensus): the swarm's model, where each cluster's own drifts from
// it for the interval's steps. Layers whose ring did not complete, or a stage in no ring
// with another cluster, test their current weights.
void AssignedStage::Impl::noteConsensus(std::vector<RingChange> changes, int64_t version)
{
    std::vector<NamedTensor> agreed;
    for (auto &c : changes)
        std::move(c.after.begin(), c.after.end(), std::back_inserter(agreed));
    try {
        runtime->setConsensus(agreed, version);
    } catch (const Error &e) {
        runtime->dropConsensus();
        log::warning("swarm", std::string("tests take the current weights: ") + e.what());
    }
}

void AssignedStage::Impl::averageRings(int64_t round)
{
    collectAveraging(true);
    const int64_t version = runtime->version();
    // Nothing trained since the snapshot: the average itself, exactly (adding the change
    // would round differently on each member).
    auto changes = averageRingsOf(runtime->parameters(), round);
    for (const auto &c : changes)
        runtime->setParameters(c.after);
    noteConsensus(std::move(changes), version);
}

void AssignedStage::Impl::startAveraging(int64_t round)
{
    if (std::all_of(rings.begin(), rings.end(), [](const StageRing &r) { return r.alone(); })) {
        runtime->dropConsensus();
        return;
    }
    averagingDone = false;
    averagingVersion = runtime->version();
    averagingThread = std::thread([this, snapshot = runtime->parameters(), round]() mutable {
        try {
            averagingChanges = averageRingsOf(std::move(snapshot), round);
        } catch (const std::exception &e) { // a malformed parameter name, say: this round only
            log::warning("swarm", std::string("an averaging round failed: ") + e.what());
        }
        averagingDone = true;
    });
}

void AssignedStage::Impl::collectAveraging(bool wait)
{
    if (!averagingThread.joinable() || (!wait && !averagingDone))
        return;
    averagingThread.join();
    auto changes = std::exchange(averagingChanges, {});
    applyChanges(changes);
    noteConsensus(std::move(changes), averagingVersion);
}

void AssignedStage::Impl::takeRingChanges()
{
    {
        std::lock_guard lock(ringsMutex);
        if (!pendingRings)
            return;
    }
    collectAveraging(true); // a round in flight used the old members (cancelled where they changed)
    std::lock_guard lock(ringsMutex);
    if (closing)
        return;
    const auto fresh = std::exchange(pendingRings, std::nullopt);
    for (auto &ring : rings) {
        for (const auto &r : *fresh)
            if (r.ringId == ring.ref.ringId && !(r == ring.ref)) {
                ring.follow(r);
                ring.outer.reset(); // other members: the next round starts from their average
            }
        // Also when the members came back before the change was taken: the cancel stands.
        if (cancelledRings.erase(ring.ref.ringId))
            ring.links->reset();
    }
}

} // namespace rookery::participant
