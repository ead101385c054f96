// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/swarm_node.h"
#include "engine/common/secret_token.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "engine/common/error.h"
#include "engine/device/governor.h"
#include "engine/device/offered_capacity.h"
#include "engine/participant/node_activity.h"
#include "engine/participant/node_run.h"

namespace rookery::participant {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<PeerAddress> peersOf(const coord::Assignment &a)
{
    std::vector<PeerAddress> peers;
    std::set<std::string> seen;
    auto add = [&](const coord::PeerRef &p) {
        if (!p.empty() && seen.insert(p.nodeId).second)
            peers.push_back({p.nodeId, p.address, p.unreachable});
    };
    add(a.previous);
    add(a.next);
    add(a.weightsFrom);
    for (const auto &r : a.rings)
        if (!r.alone()) {
            add(r.next);
            add(r.previous);
        }
    return peers;
}

// "2 rings, averaging with 3 other clusters" or "averaging alone for now".
std::string ringSummary(const coord::Assignment &a)
{
    size_t others = 0;
    for (const auto &r : a.rings)
        others = std::max(others, r.size - 1);
    if (others == 0)
        return "averaging with no other cluster for now";
    return "averaging with " + std::to_string(others) + (others == 1 ? " other cluster" : " other clusters");
}

} // namespace

void NodeRun::followAssignments()
{
    while (!stopRequested()) {
        const std::optional<coord::Assignment> incoming = awaitEvents();
        if (!m_mesh) {
            if (std::string why = gaveUpJoining(); !why.empty()) { // the client no longer retries
                m_node.say("cannot join the swarm: " + why);
                m_summary.reason = why;
                m_summary.failed = true;
                return;
            }
            noteStillWaiting();
            continue;
        }
        if (incoming && !follow(*incoming))
            return;
        if (auto stage = m_node.stage.current()) {
            if (!tend(*stage))
                return;
        } else { // placed nowhere: still say whether it is paused, so it is placed once it is not
            sendReport({}, AssignedStage::Phase::Waiting);
        }
    }
}

bool NodeRun::follow(const coord::Assignment &a)
{
    if (a.state != coord::AssignmentState::Stopped) {
        // A stage that has trained to the end keeps its place until it leaves:
        // re-plans made as the others leave are not new work for it.
        if (auto running = m_node.stage.current(); running && (running->phase() == AssignedStage::Phase::Finishing ||
                                                               running->phase() == AssignedStage::Phase::Finished)) {
            m_node.stage.release();
            return true;
        }
    }
    const bool placementChanged = !m_current || !m_current->samePlacement(a);
    const bool ringsOnly = placementChanged && m_current && m_current->keepsStage(a);
    const bool ringsChanged = !m_current || m_current->rings != a.rings;
    const bool dialsChanged = m_current && !m_current->sameReachability(a);
    m_current = a;
    m_node.updateJoin([&a](JoinState &j) {
        const bool active = a.state == coord::AssignmentState::Training;
        j.placement = active
                          ? "stage " + std::to_string(a.stage + 1) + " of " + std::to_string(a.stages) +
                                " in cluster " + std::to_string(a.cluster + 1) + " of " + std::to_string(a.clusterCount)
                          : std::string();
        j.waiting = active ? std::string() : a.reason;
    });
    if (a.state == coord::AssignmentState::Stopped) {
        m_node.say("the coordinator stopped this node: " + a.reason);
        m_summary.reason = a.reason;
        return false;
    }
    if (a.state == coord::AssignmentState::Waiting) {
        m_node.stage.replace(nullptr);
        m_node.say(a.reason.rfind("waiting", 0) == 0 ? a.reason : "waiting: " + a.reason);
    } else if (ringsOnly && m_node.stage.current()) {
        // The same stage; a cluster left the rings for now, or came back. (No copy of the
        // stage may live in this if-chain's scope: startStage() below must be able to
        // destroy the old stage, which checkpoints and joins its threads, before it
        // builds the new one.)
        const auto stage = m_node.stage.current();
        m_mesh->setPeers(peersOf(a), a.unreachable);
        if (ringsChanged) {
            stage->updateRings(a.rings);
            m_node.say("rings changed: " + ringSummary(a));
        }
    } else if (placementChanged || !m_node.stage.current()) {
        startStage(a);
    } else if (dialsChanged) { // the same stage; who dials whom changed
        m_mesh->setPeers(peersOf(a), a.unreachable);
    }
    m_node.stage.release(); // the stage stayed: messages kept since the assignment came reach it
    return true;
}

void NodeRun::startStage(const coord::Assignment &a)
{
    const auto &s = m_node.settings;
    device::Governor &governor = *m_node.governor;
    m_node.stage.replace(nullptr);
    m_mesh->setPeers(peersOf(a), a.unreachable);
    m_node.say("assignment: " + a.describe());
    AssignedStageConfig sc;
    sc.run = m_run;
    sc.assignment = a;
    sc.gate = &governor;
    sc.threads = governor.threadConfig();
    sc.checkpoints = m_prepared.checkpoints.get();
    sc.keepCheckpoints = s.keepCheckpoints;
    sc.checkpointEvery = s.checkpointEvery;
    sc.checkpointInterval = s.checkpointInterval;
    sc.ringPrecision = s.ringPrecision;
    sc.evaluateEvery = s.evaluateEvery;
    sc.complaints = m_complaints;
    SwarmNode::Impl &d = m_node;
    try {
        if (a.stage == 0) {
            auto data = rootData(a); // may download for a while: the stage slot is empty meanwhile
            sc.train = std::move(data.train);
            sc.test = std::move(data.test);
            sc.dataShard = data.within;
        }
        auto stage = std::make_shared<AssignedStage>(
            *m_mesh, sc, AssignedStage::Callbacks{[&d](const std::string &m) { d.say(m); }, d.callbacks.progress});
        // In the slot first: the weights it fetches from a peer arrive as messages.
        m_node.stage.replace(stage);
        stage->restore();
    } catch (const Error &e) {
        m_node.say(std::string("cannot start the assigned stage: ") + e.what());
    }
}

StageData NodeRun::rootData(const coord::Assignment &a)
{
    const auto &s = m_node.settings;
    const bool ownCopy = m_prepared.train && m_run.dataset == "fashion-mnist";
    if (ownCopy && !m_run.datasetSha256.empty() && !m_localDatasetSha)
        m_localDatasetSha = sha256Hex(data::manifestBytes(
            data::cutIntoShards("fashion-mnist", *m_prepared.train, *m_prepared.test, data::kDefaultShardSamples, {})));
    if (ownCopy && (m_run.datasetSha256.empty() || *m_localDatasetSha == m_run.datasetSha256)) {
        StageData d{m_prepared.train, m_prepared.test, a.shard};
        if (s.evaluateSamples > 0 && s.evaluateSamples < d.test->count) // a large model's quick test
            d.test = std::make_shared<data::ImageDataset>(data::headOf(*d.test, s.evaluateSamples));
        return d;
    }
    if (m_run.datasetSha256.empty())
        throw Error("a root stage needs the dataset " + m_run.dataset +
                    ", which the coordinator does not serve, "
                    "and there is no copy at " +
                    s.datasetDir.string() + " (on Debian: apt install dataset-fashion-mnist, or give --dataset-dir)");
    if (ownCopy)
        m_node.say("the copy of fashion-mnist at " + s.datasetDir.string() + " has content hash " +
                   m_localDatasetSha->substr(0, 16) + "..., not the run's " + m_run.datasetSha256.substr(0, 16) +
                   "...: fetching the run's from the coordinator");
    return m_fetcher->rootData(m_run.datasetSha256, a.shard, s.evaluateSamples);
}

bool NodeRun::tend(AssignedStage &stage)
{
    stage.poke();
    const auto p = stage.progress();
    coord::NodeReport report;
    report.samplesPerSecond = p.samplesPerSecond;
    report.step = p.step;
    report.loss = p.loss;
    report.samplesTotal = p.samplesTotal;
    report.busyFraction = p.busyFraction;
    report.ownSamplesPerSecond = p.ownSamplesPerSecond;
    sendReport(report, stage.phase());
    m_summary.step = p.step;
    device::Governor &governor = *m_node.governor;
    if (governor.status().state == device::GovernorState::Stopped) {
        m_summary.reason = governor.status().reason;
        m_node.say("stopping: " + m_summary.reason);
        return false;
    }
    switch (stage.phase()) {
    case AssignedStage::Phase::Finished:
        return !readyToLeave(p);
    case AssignedStage::Phase::Failed: // poke() tries again; a stage that keeps failing ends the node
        if (stage.failureCount() > 3) {
            m_summary.reason = stage.lastStop();
            m_summary.failed = true;
            m_node.say("giving up after repeated failures: " + m_summary.reason);
            return false;
        }
        return true;
    default:
        return true;
    }
}

void NodeRun::sendReport(coord::NodeReport report, AssignedStage::Phase phase)
{
    const device::GovernorStatus governed = m_node.governor->status();
    report.activity = nodeActivity(phase, governed.state);
    report.away = report.activity == coord::NodeActivity::Paused ? awayReason(governed.hold) : coord::AwayReason::None;
    if (const auto slept = m_suspend.poll()) { // its links and the coordinator's will have timed out meanwhile
        m_slept += *slept;
        m_node.say("this computer was asleep for " + std::to_string(slept->count() / 1000) +
                   " s; links that timed out meanwhile are being made again");
    }
    report.sleptSeconds = std::chrono::duration_cast<std::chrono::seconds>(m_slept).count();
    report.complaints = m_complaints->snapshot();
    report.computeOfferScale = computeOfferScale();
    if (m_mesh) {
        const double cap = uploadCapBytesPerSecond(m_node.settings.governor);
        for (const auto &f : m_mesh->linkFigures())
            report.links[f.peerId] = {cap > 0 ? std::min(f.uploadBytesPerSecond, cap) : f.uploadBytesPerSecond,
                                      int64_t(std::min<uint64_t>(f.roundTripUs, uint64_t(1) << 62))};
    }
    m_client->report(report);
}

double NodeRun::computeOfferScale() const
{
    const double now = device::offeredProfile(m_prepared.measured, m_node.governor->settings()).gflopsAllThreads;
    return m_prepared.offeredGflops > 0 && now > 0 ? now / m_prepared.offeredGflops : 0;
}

bool NodeRun::readyToLeave(const StageProgress &p)
{
    m_summary.completed = true;
    m_summary.testAccuracy = p.testAccuracy;
    if (!m_node.settings.exitWhenDone)
        return false;
    // Stay while the stage before us may still ask for our final weights.
    if (!m_finishedAt)
        m_finishedAt = Clock::now();
    const bool previousGone = m_current->previous.empty() || !m_mesh->isUp(m_current->previous.nodeId);
    // A volunteer's relay stays while it carries others' links: they may still be
    // finishing (a last ring round, the final weights a root gathers), and would lose
    // them if it left first.
    const uint64_t relayedPairs = m_relay ? m_relay->counters().pairsActive : 0;
    if (relayedPairs > 0 && !m_saidRelayStays) {
        m_saidRelayStays = true;
        m_node.say("the run is complete; this node's relay still carries " + std::to_string(relayedPairs) +
                   (relayedPairs == 1 ? " link" : " links") + " for other volunteers: staying until they end");
    }
    if ((previousGone && relayedPairs == 0) || Clock::now() - *m_finishedAt > std::chrono::seconds(180)) {
        m_summary.reason = "the run is complete";
        return true;
    }
    return false;
}

SwarmNodeSummary NodeRun::leave()
{
    if (stopRequested() && m_summary.reason.empty())
        m_summary.reason = "stopped on request";
    m_node.stage.replace(nullptr); // checkpoints
    if (m_summary.completed)
        m_client->leave("the run is complete");
    else
        m_client->stop(); // the coordinator keeps our place for a quick restart
    m_mesh.reset();
    m_routerPort.reset(); // removes the mapping
    return m_summary;
}

SwarmNode::SwarmNode(SwarmNodeSettings settings, Callbacks callbacks, std::shared_ptr<device::Governor> governor)
    : d(std::make_unique<Impl>())
{
    d->settings = std::move(settings);
    d->callbacks = std::move(callbacks);
    d->governor = governor ? std::move(governor) : std::make_shared<device::Governor>(d->settings.governor);
}

SwarmNode::~SwarmNode() = default;
device::Governor &SwarmNode::governor() { return *d->governor; }

SwarmNodeSummary SwarmNode::run(const std::atomic<bool> *stop)
{
    // Preparing (in NodeRun's constructor) throws for bad input before joining anything.
    NodeRun run(*d, stop);
    return run.run();
}

} // namespace rookery::participant
