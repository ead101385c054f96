// SPDX-License-Identifier: GPL-3.0-or-later
// The Coordinator's life cycle (start, stop, the worker thread), its status document and
// its public face. The stored run is resumed in coordinator_resume.cpp; planning rounds
// are in coordinator_planning.cpp.
#include "engine/coord/coordinator.h"

#include <algorithm>
#include <utility>

#include <unistd.h>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/paths.h"
#include "engine/common/wall_clock.h"
#include "engine/coord/coordinator_impl.h"
#include "engine/coord/coordinator_metrics.h"
#include "engine/coord/join_address.h"
#include "engine/coord/operator_token.h"
#include "engine/coord/registration_check.h"
#include "engine/coord/wire_convert.h"
#include "engine/net/host_port.h"
#include "engine/net/tcp_listen.h"

namespace rookery::coord {
namespace {

std::string hostForAddress(const CoordinatorSettings &s)
{
    std::string host = s.publicHost;
    if (host.empty()) {
        host = s.bindAddress;
        if (net::isWildcardHost(host)) {
            char name[256] = {};
            host = gethostname(name, sizeof name - 1) == 0 && name[0] ? name : "127.0.0.1";
        }
    }
    return net::bracketed(host);
}

} // namespace

using namespace coordinator_detail;

Coordinator::Impl::Impl(CoordinatorSettings s)
    : settings(std::move(s))
    , identity((ensurePrivateDirectory(settings.dataDir),
                CoordinatorIdentity::loadOrCreate(settings.dataDir, settings.swarmName)))
    , store(settings.dataDir / "rookery.db")
    , run((validate(settings.run), settings.run))
    , plan(planModelOf(run, settings),
           {run.seed, settings.planPopulation, settings.planGenerations, settings.clusterSize})
{
    const StoredState stored = store.load();
    RegistryConfig rc;
    rc.heartbeatInterval = settings.heartbeatInterval;
    rc.heartbeatTimeout = settings.heartbeatTimeout;
    rc.heartbeatBudget = settings.heartbeatBudget;
    rc.verdictWait = settings.reachabilityTimeout + std::chrono::seconds(2);
    rc.registerTimeout = settings.registerTimeout;
    rc.certificateValidity = settings.certificateLifetime;
    rc.rejoinGrace = settings.rejoinGrace;
    rc.addressLimits = settings.addressLimits;
    rc.quarantineAfter = settings.quarantineAfter;
    if (settings.admission == Admission::InviteOnly) {
        invites = std::make_unique<InviteBook>(settings.dataDir / "rookery.db");
        rc.invites = invites.get();
    }
    RegistryHooks hooks;
    hooks.join = [this](const std::string &id, const swarm::Capacity &c) { enqueueJoin(id, c); };
    hooks.leave = [this](const std::string &id) { enqueueLeave(id); };
    hooks.addressesChanged = [this] {
        std::lock_guard lock(inboxMutex);
        republish = true;
    };
    hooks.awayChanged = [this] {
        std::lock_guard lock(inboxMutex);
        republish = true;
    };
    hooks.changed = [this] { ++statusVersion; };
    hooks.relay = [this](const std::string &dialer, const std::string &acceptor) {
        if (!relayServer)
            throw Error("this coordinator runs no relay (--no-relay), and no volunteer's relay is available");
        const auto [a, b] = relayServer->expectPair(dialer, acceptor);
        return RelayTickets{host + ":" + std::to_string(relayServer->port()), relay::tokenToBytes(a),
                            relay::tokenToBytes(b)};
    };
    if (settings.reachabilityTimeout.count() > 0) // else no checks: nodes are placed as they come
        hooks.probe = [this](const std::string &id, const std::string &address) {
            if (probe) // made in start(); none while the stored run is restored
                probe->check(id, address);
        };
    restore(stored);                  // settles run.runId
    if (!run.datasetSha256.empty()) { // throws, saying what is missing, before anything listens
        dataset = std::make_unique<DatasetServer>(datasetStoreOf(settings.dataDir), run.datasetSha256);
        hooks.data = [this](const net::DataRequest &r) { return dataset->serve(r); };
    }
    rc.runId = run.runId;
    rc.run = toWire(run);
    registry = std::make_unique<NodeRegistry>(rc, identity.ca, &store, replay, std::move(hooks));
    registry->restore(stored, plan.ids(), settings.restartGrace);
    summary = summarize(plan);
}

void Coordinator::Impl::start()
{
    net = std::make_unique<net::NetContext>(std::max(1, settings.ioThreads));
    net::ListenerConfig lc;
    lc.bindAddress = settings.bindAddress;
    lc.port = settings.port;
    lc.credentials = {identity.certificatePem, identity.key.privateKeyPem(), identity.ca.certificatePem()};
    lc.clients.kind = net::PeerCheck::Kind::AnyCertificate; // registration: the node id comes from its key
    lc.link.role = net::NodeRole::Coordinator;
    lc.link.nodeId = identity.key.nodeId();
    lc.link.limits = coordinatorInboundLimits();
    lc.link.maxSendBytes = coordinatorLinkLimits().maxMessageBytes;
    lc.link.maxQueuedBytes = 16u << 20;
    lc.maxLinks = settings.maxNodes + 64;
    lc.maxLinksPerAddress = settings.maxLinksPerAddress;
    net::LinkEvents events;
    NodeRegistry *r = registry.get();
    events.opened = [r](const std::shared_ptr<net::Link> &l) { r->opened(l); };
    events.message = [r](const std::shared_ptr<net::Link> &l, net::Message &&m) { r->message(l, std::move(m)); };
    events.closed = [r](const std::shared_ptr<net::Link> &l, const net::CloseInfo &) { r->closed(l); };
    if (settings.reachabilityTimeout.count() > 0) {
        ReachabilityProbeConfig pc;
        pc.credentials = lc.credentials;
        pc.link.role = net::NodeRole::Coordinator;
        pc.link.nodeId = identity.key.nodeId();
        pc.timeout = settings.reachabilityTimeout;
        probe = std::make_unique<ReachabilityProbe>(
            *net, pc, [r](const std::string &id, const std::string &address, bool reachable, const std::string &note) {
                r->setReachability(id, address, reachable, note);
            });
    }
    if (settings.relay) {
        relay::RelaySettings rs;
        rs.bindAddress = settings.bindAddress;
        rs.port = settings.relayPort;
        rs.maxPairs = settings.maxNodes;
        rs.maxPairsPerNode = settings.relayPairsPerNode;
        rs.bytesPerSecondPerPair = settings.relayBytesPerSecondPerPair;
        relayServer = std::make_unique<relay::RelayServer>(rs);
    }
    listener = std::make_unique<net::Listener>(*net, lc, events);
    StatusServerConfig sc;
    sc.bindAddress = settings.bindAddress;
    sc.port = settings.statusPort;
    sc.credentials = lc.credentials;
    sc.feedInterval = settings.statusFeedInterval;
    sc.feedLifetime = settings.statusFeedLifetime;
    sc.operatorToken = loadOrCreateOperatorToken(settings.dataDir);
    status = std::make_unique<StatusServer>(
        *net, sc, [this](StatusView view) { return statusDocument(view); },
        [this] { return coordinatorMetrics(statusInputs()); });
    host = hostForAddress(settings);
    worker = std::thread([this] { work(); });
}

void Coordinator::Impl::stop()
{
    if (stopped)
        return;
    stopped = true;
    if (status)
        status->stop();
    if (listener) {
        listener->stop();
        // Let the Goodbyes go out: nodes then reconnect at once rather than time out.
        for (int i = 0; i < 200 && listener->linkCount() > 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    {
        std::lock_guard lock(inboxMutex);
        stopping = true;
    }
    inboxWake.notify_all();
    if (worker.joinable())
        worker.join();
    probe.reset(); // closes the checks in flight
    relayServer.reset();
    if (net)
        net->stop();
    store.saveMetrics(registry->takeMetrics(nowMs()));
    store.flush();
}

void Coordinator::Impl::work()
{
    const auto tick =
        std::clamp(settings.planInterval / 2, std::chrono::milliseconds(10), std::chrono::milliseconds(100));
    auto nextMetrics = Clock::now() + settings.metricsInterval;
    std::unique_lock lock(inboxMutex);
    while (!stopping) {
        inboxWake.wait_for(lock, tick);
        if (stopping)
            break;
        lock.unlock();
        try {
            const auto now = Clock::now();
            registry->tick(now);
            if (probe)
                probe->tick(now);
            takeMeasuredLinks(); // before anything here re-cuts a cluster
            maybePlan(now);
            checkOffers();
            checkStragglers(now);
            checkClaims(now);
            trimMemory(now);
            if (now >= nextMetrics) {
                nextMetrics = now + settings.metricsInterval;
                const int64_t ms = nowMs();
                store.saveMetrics(registry->takeMetrics(ms));
                replay.prune(ms);
                store.prune(
                    ms - 2 * std::chrono::duration_cast<std::chrono::milliseconds>(kRegistrationClockWindow).count(),
                    ms - std::chrono::duration_cast<std::chrono::milliseconds>(settings.metricsRetention).count());
            }
        } catch (const std::exception &e) {
            log::error(kArea, std::string("the coordinator's worker hit an error: ") + e.what());
        }
        lock.lock();
    }
}
StatusDocument Coordinator::Impl::statusDocument(StatusView view)
{
    const uint64_t version = statusVersion.load();
    std::lock_guard lock(statusMutex);
    auto &cache = statusCaches[view == StatusView::Full ? 1 : 0];
    const auto now = Clock::now();
    if (!cache.json || cache.version != version || now - cache.at > std::chrono::milliseconds(500)) {
        cache.json = std::make_shared<const std::string>(coord::statusJson(statusInputs(), view));
        cache.version = version;
        cache.at = now;
    }
    return {version, cache.json};
}

StatusInputs Coordinator::Impl::statusInputs()
{
    StatusInputs in;
    in.swarm = settings.swarmName;
    in.address = "wss://" + host + ":" + std::to_string(listener->port()) + "/#sha256=" + identity.fingerprint;
    in.run = run;
    in.jobName = settings.jobName;
    {
        std::lock_guard s(summaryMutex);
        in.plan = summary;
    }
    in.nodes = registry->snapshot();
    in.counters = registry->counters();
    in.listener = listener->counters();
    in.relayedBytes = relayServer ? relayServer->counters().bytesRelayed : 0;
    const auto queue = store.queueFigures();
    in.storeQueuedJobs = queue.jobs;
    in.storeDroppedMetrics = queue.droppedMetrics;
    in.storeHeldBack = queue.heldBack;
    in.uptimeMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - startedAt).count();
    in.timeMs = nowMs();
    return in;
}

Coordinator::Coordinator(CoordinatorSettings settings)
    : m(std::make_unique<Impl>(std::move(settings)))
{
    m->start();
    try {
        writeJoinAddress(m->settings.dataDir, coordinatorAddress());
    } catch (const Error &e) {
        log::warning(kArea, std::string(e.what()) + ": `rookery-coordinator invite` will not find the address");
    }
    if (m->settings.admission == Admission::Open)
        log::warning(kArea, "admission is open: anyone who can reach " + address() +
                                " may join this swarm and be given stages and ring seats");
    else
        log::info(kArea, "admission is by invite: new volunteers need a join string from `rookery-coordinator "
                         "invite` (" +
                             std::to_string(m->invites->usableCount(nowMs())) + " usable invites)");
    log::info(kArea, "coordinator of swarm '" + m->settings.swarmName + "' at " + address() + "; status at https://" +
                         m->host + ":" + std::to_string(statusPort()) + "/v1/status; run " + m->run.runId + " (" +
                         m->run.model.name + ")");
}

Coordinator::~Coordinator() { stop(); }

void Coordinator::stop() { m->stop(); }

std::string Coordinator::address() const { return coordinatorAddress().toString(); }

net::CoordinatorAddress Coordinator::coordinatorAddress() const
{
    net::CoordinatorAddress a;
    a.host = net::unbracketed(m->host);
    a.port = port();
    a.path = "/";
    a.sha256 = m->identity.fingerprint;
    return a;
}

uint16_t Coordinator::port() const { return m->listener->port(); }
uint16_t Coordinator::statusPort() const { return m->status->port(); }
uint16_t Coordinator::relayPort() const { return m->relayServer ? m->relayServer->port() : 0; }
const std::string &Coordinator::certificatePem() const { return m->identity.certificatePem; }
const std::string &Coordinator::caCertificatePem() const { return m->identity.ca.certificatePem(); }
const RunConfig &Coordinator::run() const { return m->run; }
std::string Coordinator::statusJson(StatusView view) const { return *m->statusDocument(view).json; }

std::filesystem::path Coordinator::operatorTokenPath() const { return coord::operatorTokenPath(m->settings.dataDir); }

CoordinatorCounters Coordinator::counters() const
{
    const auto c = m->registry->counters();
    const auto nodes = m->registry->snapshot();
    bool planned;
    {
        std::lock_guard lock(m->summaryMutex);
        planned = m->summary.hasPlan;
    }
    CoordinatorCounters out;
    out.registrations = c.registrations;
    const auto l = m->listener->counters();
    out.refusals = c.refusals + l.refusedFull + l.refusedPerAddress;
    out.refusedNotInvited = c.refusedNotInvited;
    out.refusedLimited = c.refusedLimited;
    out.quarantined = c.quarantined;
    out.refusedConnections = l.refusedFull + l.refusedPerAddress;
    out.heartbeats = c.heartbeats;
    out.assignmentPushes = c.assignmentPushes;
    out.relayGrants = c.relayGrants;
    out.relayedBytes = m->relayServer ? m->relayServer->counters().bytesRelayed : 0;
    out.dataBytesServed = m->dataset ? m->dataset->bytesServed() : 0;
    out.planRounds = m->planRounds.load();
    out.nodesOnline = m->registry->onlineCount();
    out.nodesKnown = nodes.size();
    out.planned = planned;
    return out;
}

std::string Coordinator::createInvite(int64_t uses, std::chrono::seconds validity, const std::string &note)
{
    if (!m->invites)
        throw Error("this coordinator is open to anyone who can reach it: it needs no invites");
    auto a = coordinatorAddress();
    a.invite = m->invites->create(uses, validity, note, nowMs()).token;
    return a.toString();
}

std::map<std::string, Assignment> Coordinator::assignments() const { return m->registry->assignments(); }

void Coordinator::requestFullReplan()
{
    std::lock_guard lock(m->inboxMutex);
    m->fullReplan = true;
}

} // namespace rookery::coord
