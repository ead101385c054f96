// SPDX-License-Identifier: GPL-3.0-or-later
// NodeRun's way into the swarm: the coordinator link and its events, the relay this node
// may offer other volunteers, and the peer mesh once registered.
#include <utility>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/device/governor.h"
#include "engine/net/host_port.h"
#include "engine/net/tcp_listen.h"
#include "engine/participant/net_ring_links.h"
#include "engine/participant/node_run.h"
#include "engine/participant/testing_misbehaviour.h"

namespace rookery::participant {

using Clock = std::chrono::steady_clock;

double uploadCapBytesPerSecond(const device::GovernorSettings &g)
{
    return g.whenActive.uploadKiBps > 0 ? double(g.whenActive.uploadKiBps) * 1024 : 0;
}

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
        // A stage that will be rebuilt gets no more messages meanwhile: they wait for
        // its successor (follow() rebuilds it, or releases them to it). One whose rings
        // alone change keeps them: it may be fetching the layers it takes over, and
        // holding the answer back lost them (the fetch gave up after 45 s, and the layers
        // started again from the run's initial weights).
        if (const auto stage = d.stage.current(); stage && !stage->assignment().keepsStage(a)) {
            const auto phase = stage->phase();
            if (phase != AssignedStage::Phase::Finishing && phase != AssignedStage::Phase::Finished)
                d.stage.hold();
        }
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
    ce.dataPiece = [fetcher = m_fetcher.get()](const net::DataPiece &p) { fetcher->onPiece(p); };
    const double cap = uploadCapBytesPerSecond(m_node.settings.governor);
    ce.uploadMeasured = [&d, cap](double, const std::string &account) {
        d.say("upload to the coordinator: " + account +
              (cap > 0 ? "; the planner is told at most this node's upload cap, " + format::bytes(cap) + "/s"
                       : std::string()));
    };
    ce.banned = [&d](const net::BanList &b) {
        std::lock_guard lock(d.mutex);
        d.banned = b.nodeIds;
        d.wake.notify_all();
    };
    ce.relayExpected = [this](const net::RelayExpect &e) {
        if (!m_relay)
            return;
        try {
            m_relay->expectPair(e.nodeA, e.nodeB, relay::tokenFromBytes(e.tokenA), relay::tokenFromBytes(e.tokenB));
        } catch (const Error &err) {
            log::warning("node", std::string("this node's relay cannot take another pair: ") + err.what());
        }
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
    // What the planner is told of this node's upload: measured on the coordinator's link
    // before registering, never above the volunteer's upload cap.
    cc.measureUpload = true;
    cc.uploadCapBytesPerSecond = uploadCapBytesPerSecond(s.governor);
    if (s.relayPort)
        cc.relayPort = startRelay();
    // Before the client, whose events it takes: the cache of dataset shards fetched.
    m_dataCache = std::make_unique<data::ShardStore>(s.dataDir / "data-cache", s.dataCacheBytes);
    DatasetFetcher::Config fc;
    fc.cache = m_dataCache.get();
    fc.send = [this](const net::DataRequest &r) { return m_client && m_client->requestData(r); };
    fc.say = [this](const std::string &text) { m_node.say(text); };
    fc.stop = m_stop;
    m_fetcher = std::make_unique<DatasetFetcher>(fc);
    m_client = std::make_unique<coord::CoordinatorClient>(m_net, cc, m_prepared.identity, coordinatorEvents());
    m_client->start();
    m_node.say("joining the swarm at " + address.host + ":" + std::to_string(address.port) + " as node " +
               m_prepared.identity.nodeId().substr(0, 12) + " (" + s.name + "), listening for peers on port " +
               std::to_string(m_prepared.port));
    m_lastWaitNote = Clock::now();
}

uint16_t NodeRun::startRelay()
{
    const auto &s = m_node.settings;
    relay::RelaySettings rs;
    rs.bindAddress = s.bindAddress;
    rs.port = s.relayPort;
    rs.bytesPerSecondPerPair = s.relayBytesPerSecondPerPair;
    m_relay = std::make_unique<relay::RelayServer>(rs); // throws, saying why, when the port is taken
    uint16_t port = m_relay->port();
    if (m_routerPort) { // peers reach this node through its router: the relay too
        SwarmNode::Impl &d = m_node;
        m_relayRouterPort = std::make_unique<RouterPort>(port, std::chrono::seconds(6),
                                                         [&d](const std::string &text) { d.say("relay: " + text); });
        const std::string mapped = m_relayRouterPort->advertised({});
        if (mapped.empty()) {
            m_node.warn("the router did not forward the relay's port " + std::to_string(port) +
                        ": the relay is offered only if peers can reach that port");
        } else {
            port = net::splitHostPort(mapped).second;
        }
    }
    m_node.say("running a relay for other volunteers on port " + std::to_string(port));
    return port;
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
    if (m_mesh && m_node.registration && m_node.registration->certificatePem != m_meshCertificate) {
        const coord::Registration registration = *m_node.registration; // registered again: a renewal
        lock.unlock();
        try {
            m_mesh->setCredentials(
                {registration.certificatePem, m_prepared.identity.privateKeyPem(), registration.caCertificatePem});
            m_meshCertificate = registration.certificatePem;
            m_node.say("renewed its certificate: its peer links use the new one");
        } catch (const Error &e) {
            m_node.warn(std::string("the renewed certificate cannot be used: ") + e.what());
            m_meshCertificate = registration.certificatePem; // not again for the same one
        }
        lock.lock();
    }
    if (m_mesh) {
        const auto grants = std::exchange(m_node.relayGrants, {});
        const auto banned = std::exchange(m_node.banned, std::nullopt);
        lock.unlock();
        if (banned)
            m_mesh->setBanned(std::set<std::string>(banned->begin(), banned->end()));
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
    m_meshCertificate = registration.certificatePem;
    mc.wan = net::wanEmulationFromEnvironment(); // a testing option; off unless set
    mc.link.compression = s.peerCompression;
    (void)testingMisbehaviour(); // another; says so now, or refuses a bad value
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

} // namespace rookery::participant
