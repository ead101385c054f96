// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/swarm_node.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/coord/coordinator_client.h"
#include "engine/device/governor.h"
#include "engine/net/net_context.h"
#include "engine/net/tcp_listen.h"
#include "engine/participant/node_preparation.h"
#include "engine/participant/peer_mesh.h"
#include "engine/participant/router_port.h"
#include "engine/participant/stage_slot.h"

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
        if (r.members.size() >= 2) {
            add(r.members[(r.rank + 1) % r.members.size()]);
            add(r.members[(r.rank + r.members.size() - 1) % r.members.size()]);
        }
    return peers;
}

coord::NodeActivity activityOf(const AssignedStage &stage)
{
    switch (stage.phase()) {
    case AssignedStage::Phase::Training:
    case AssignedStage::Phase::Finishing:
        return coord::NodeActivity::Training;
    case AssignedStage::Phase::Failed:
        return coord::NodeActivity::Failed;
    default:
        return coord::NodeActivity::Waiting;
    }
}

} // namespace

struct SwarmNode::Impl
{
    SwarmNodeSettings settings;
    Callbacks callbacks;

    std::mutex mutex; // events from the coordinator link
    std::condition_variable wake;
    std::optional<coord::Registration> registration;
    std::optional<coord::Assignment> newAssignment;
    std::vector<net::RelayGrant> relayGrants; ///< for the mesh, in the order they came
    std::string lastError;

    std::shared_ptr<device::Governor> governor; // outlives every stage and link

    StageSlot stage; // the mesh's events reach the current stage through it

    std::mutex joinMutex; // orders the join callbacks
    JoinState joinState;

    /// Applies `change` to the join state and tells the callback when that changed it.
    template <class Change> void updateJoin(Change &&change)
    {
        std::lock_guard lock(joinMutex);
        JoinState next = joinState;
        change(next);
        if (next == joinState)
            return;
        joinState = next;
        if (callbacks.join)
            callbacks.join(joinState);
    }

    void say(const std::string &text)
    {
        log::info("node", text);
        if (callbacks.message)
            callbacks.message(text);
    }

    void warn(const std::string &text)
    {
        log::warning("node", text);
        if (callbacks.warning)
            callbacks.warning(text);
    }
};

namespace {

// One call of SwarmNode::run(), in its phases: prepare (everything that can fail on bad
// input), join (the coordinator link), follow the assignments until it is time to go,
// leave. The members go in the reverse of their order: the mesh, the coordinator link,
// the network context, and last the data and the checkpoint store (leave() has already
// destroyed the stage, which uses them all).
class NodeRun
{
public:
    NodeRun(SwarmNode::Impl &node, const std::atomic<bool> *stop)
        : m_node(node)
        , m_stop(stop)
        , m_prepared(prepareSwarmNode(node.settings))
    { }

    SwarmNodeSummary run()
    {
        join();
        followAssignments();
        return leave();
    }

private:
    bool stopRequested() const { return m_stop && m_stop->load(); }
    void join();
    coord::CoordinatorClientEvents coordinatorEvents();
    void followAssignments();
    std::optional<coord::Assignment> awaitEvents(); // and opens the mesh once registered
    void openMesh(const coord::Registration &registration);
    void noteStillWaiting();
    std::string gaveUpJoining();             // why, once joining cannot succeed; else "".
    bool follow(const coord::Assignment &a); // false: the coordinator stopped this node
    void startStage(const coord::Assignment &a);
    bool tend(AssignedStage &stage);           // false: time to leave
    bool readyToLeave(const StageProgress &p); // the stage finished: true when the node may go now
    SwarmNodeSummary leave();

    SwarmNode::Impl &m_node;
    const std::atomic<bool> *m_stop;
    PreparedNode m_prepared;
    net::NetContext m_net;
    std::unique_ptr<coord::CoordinatorClient> m_client;
    std::unique_ptr<PeerMesh> m_mesh;
    std::unique_ptr<RouterPort> m_routerPort; ///< the peer port forwarded on the home router
    coord::RunConfig m_run;
    std::optional<coord::Assignment> m_current;
    SwarmNodeSummary m_summary;
    Clock::time_point m_lastWaitNote;
    std::optional<Clock::time_point> m_finishedAt;
};

coord::CoordinatorClientEvents NodeRun::coordinatorEvents()
{
    coord::CoordinatorClientEvents ce;
    SwarmNode::Impl &d = m_node; // outlives the client
    ce.registered = [&d](const coord::Registration &r) {
        d.updateJoin([](JoinState &j) {
            j.connected = j.registered = true;
            j.connectProblem.clear();
            j.registerProblem.clear();
        });
        std::lock_guard lock(d.mutex);
        d.registration = r;
        d.newAssignment = r.assignment;
        d.wake.notify_all();
    };
    ce.connection = [&d](bool up) {
        d.updateJoin([up](JoinState &j) {
            j.connected = up;
            j.registered = j.registered && up;
            if (up)
                j.connectProblem.clear();
        });
    };
    ce.attemptFailed = [&d](const std::string &reason) {
        d.updateJoin([&reason](JoinState &j) {
            j.connected = j.registered = false;
            j.connectProblem = reason;
        });
    };
    ce.assignmentChanged = [&d](const coord::Assignment &a) {
        std::lock_guard lock(d.mutex);
        d.newAssignment = a;
        d.wake.notify_all();
    };
    ce.relayGranted = [&d](const net::RelayGrant &g) {
        std::lock_guard lock(d.mutex);
        if (d.relayGrants.size() < 64) // a node has a handful of neighbours
            d.relayGrants.push_back(g);
        d.wake.notify_all();
    };
    ce.error = [&d](const std::string &text) { // a refusal, or a failure retrying cannot mend
        log::warning("node", "coordinator: " + text);
        d.updateJoin([&text](JoinState &j) {
            (j.connected ? j.registerProblem : j.connectProblem) = text;
            j.gaveUp = true;
        });
        std::lock_guard lock(d.mutex);
        d.lastError = text;
        d.wake.notify_all();
    };
    return ce;
}

void NodeRun::join()
{
    const auto &s = m_node.settings;
    const auto &address = m_prepared.address;
    coord::CoordinatorClientConfig cc;
    cc.address = address;
    cc.name = s.name;
    cc.listenAddress = m_prepared.advertised;
    if (s.mapPort && s.publicAddress.empty() && !net::isLoopbackHost(s.bindAddress)) {
        SwarmNode::Impl &d = m_node; // outlives the mapper
        m_routerPort = std::make_unique<RouterPort>(m_prepared.port, std::chrono::seconds(6),
                                                    [&d](const std::string &text) { d.say(text); });
        cc.listenAddress = m_routerPort->advertised(cc.listenAddress);
    }
    cc.profileJson = m_prepared.profileJson;
    m_client = std::make_unique<coord::CoordinatorClient>(m_net, cc, m_prepared.identity, coordinatorEvents());
    m_client->start();
    m_node.say("joining the swarm at " + address.host + ":" + std::to_string(address.port) + " as node " +
               m_prepared.identity.nodeId().substr(0, 12) + " (" + s.name + "), listening for peers on port " +
               std::to_string(m_prepared.port));
    m_lastWaitNote = Clock::now();
}

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
        if (auto stage = m_node.stage.current(); stage && !tend(*stage))
            return;
    }
}

std::optional<coord::Assignment> NodeRun::awaitEvents()
{
    std::unique_lock lock(m_node.mutex);
    m_node.wake.wait_for(lock, std::chrono::milliseconds(250));
    if (m_node.registration && !m_mesh) {
        m_run = m_node.registration->run;
        const coord::Registration registration = *m_node.registration;
        lock.unlock();
        openMesh(registration);
        lock.lock();
    }
    if (m_mesh) {
        const auto grants = std::exchange(m_node.relayGrants, {});
        lock.unlock();
        for (const auto &g : grants)
            m_mesh->relayGranted(g);
        m_mesh->tick();
        lock.lock();
    }
    if (m_mesh && m_node.newAssignment)
        return std::exchange(m_node.newAssignment, std::nullopt);
    return std::nullopt;
}

void NodeRun::openMesh(const coord::Registration &registration)
{
    const auto &s = m_node.settings;
    device::Governor &governor = *m_node.governor;
    PeerMesh::Config mc;
    mc.nodeId = m_prepared.identity.nodeId();
    mc.bindAddress = s.bindAddress;
    mc.port = m_prepared.port;
    mc.credentials = {registration.certificatePem, m_prepared.identity.privateKeyPem(), registration.caCertificatePem};
    mc.wan = net::wanEmulationFromEnvironment(); // a testing option; off unless set
    // The governor's caps apply to every link (it outlives them).
    mc.link.upload = std::shared_ptr<TokenBucket>(std::shared_ptr<void>(), &governor.uploadLimiter());
    mc.link.download = std::shared_ptr<TokenBucket>(std::shared_ptr<void>(), &governor.downloadLimiter());
    SwarmNode::Impl &d = m_node; // outlives the mesh
    PeerMesh::Events me;
    me.message = [&d](const std::string &peer, net::Message &&m) { d.stage.deliver(peer, std::move(m)); };
    me.link = [&d](const std::string &peer, bool up) {
        d.stage.linkChanged(peer, up);
        d.wake.notify_all();
    };
    me.writable = [&d](const std::string &peer) { d.stage.writable(peer); };
    me.problem = [&d](const std::string &, const std::string &text) { d.warn(text); };
    me.needRelay = [this](const std::string &peer) {
        if (!m_client->requestRelay(peer))
            log::info("node", "cannot ask for a relay to " + peer.substr(0, 12) + " now: not registered");
    };
    m_mesh = std::make_unique<PeerMesh>(m_net, mc, me);
    m_node.say("registered: run '" + m_run.runId + "', model " + m_run.model.name + ", " +
               std::to_string(m_run.totalSteps) + " steps");
}

std::string NodeRun::gaveUpJoining()
{
    std::lock_guard lock(m_node.joinMutex);
    const JoinState &j = m_node.joinState;
    if (!j.gaveUp || j.registered)
        return {};
    return j.registerProblem.empty() ? j.connectProblem : j.registerProblem;
}

void NodeRun::noteStillWaiting()
{
    if (Clock::now() - m_lastWaitNote <= std::chrono::seconds(10))
        return;
    m_lastWaitNote = Clock::now();
    std::lock_guard lock(m_node.mutex);
    m_node.say("still waiting for the coordinator" + (m_node.lastError.empty() ? "" : ": " + m_node.lastError));
}

bool NodeRun::follow(const coord::Assignment &a)
{
    if (a.state != coord::AssignmentState::Stopped) {
        // A stage that has trained to the end keeps its place until it leaves:
        // re-plans made as the others leave are not new work for it.
        if (auto running = m_node.stage.current(); running && (running->phase() == AssignedStage::Phase::Finishing ||
                                                               running->phase() == AssignedStage::Phase::Finished))
            return true;
    }
    const bool placementChanged = !m_current || !m_current->samePlacement(a);
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
    } else if (placementChanged || !m_node.stage.current()) {
        startStage(a);
    } else if (dialsChanged) { // the same stage; who dials whom changed
        m_mesh->setPeers(peersOf(a), a.unreachable);
    }
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
    sc.train = m_prepared.train;
    sc.test = m_prepared.test;
    sc.gate = &governor;
    sc.threads = governor.threadConfig();
    sc.checkpoints = m_prepared.checkpoints.get();
    sc.keepCheckpoints = s.keepCheckpoints;
    sc.checkpointEvery = s.checkpointEvery;
    sc.evaluateEvery = s.evaluateEvery;
    SwarmNode::Impl &d = m_node;
    try {
        m_node.stage.replace(std::make_shared<AssignedStage>(
            *m_mesh, sc, AssignedStage::Callbacks{[&d](const std::string &m) { d.say(m); }, d.callbacks.progress}));
    } catch (const Error &e) {
        m_node.say(std::string("cannot start the assigned stage: ") + e.what());
    }
}

bool NodeRun::tend(AssignedStage &stage)
{
    stage.poke();
    const auto p = stage.progress();
    coord::NodeReport report;
    report.samplesPerSecond = p.samplesPerSecond;
    report.step = p.step;
    report.loss = p.loss;
    report.activity = activityOf(stage);
    report.samplesTotal = p.samplesTotal;
    report.busyFraction = p.busyFraction;
    m_client->report(report);
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
    if (previousGone || Clock::now() - *m_finishedAt > std::chrono::seconds(180)) {
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

} // namespace

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
