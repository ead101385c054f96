// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/node/swarm_node.h"

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/paths.h"
#include "engine/coord/coordinator_client.h"
#include "engine/device/governor.h"
#include "engine/device/profile_service.h"
#include "engine/net/coordinator_address.h"
#include "engine/net/identity.h"
#include "engine/net/net_context.h"
#include "engine/node/peer_mesh.h"
#include "engine/store/checkpoint_store.h"

namespace rookery::node {
namespace {

using Clock = std::chrono::steady_clock;

// A free TCP port on `host` for the peer listener: the coordinator must learn the
// address at registration, before the listener (which needs the certificate that
// registration brings) exists. `preferred` first, when it is free.
uint16_t freePort(const std::string &host, uint16_t preferred)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        throw Error("cannot open a socket to find a free port");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    if (::inet_pton(AF_INET, host == "0.0.0.0" ? "0.0.0.0" : host.c_str(), &addr.sin_addr) != 1) {
        ::close(fd);
        throw Error("--bind '" + host + "' is not an IPv4 address");
    }
    socklen_t len = sizeof addr;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); // as the listener will
    addr.sin_port = htons(preferred);
    bool bound = preferred != 0 && ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    if (!bound) {
        addr.sin_port = 0;
        bound = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    }
    const bool ok = bound && ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0;
    ::close(fd);
    if (!ok)
        throw Error("cannot bind to " + host + " to find a free port for peers");
    return ntohs(addr.sin_port);
}

// A port number kept in a file of the data directory; 0 when missing or unreadable.
uint64_t readSmallNumber(const std::filesystem::path &path)
{
    std::ifstream in(path);
    uint64_t value = 0;
    if (!(in >> value) || value > 65535)
        return 0;
    return value;
}

void writeSmallNumber(const std::filesystem::path &path, uint64_t value)
{
    std::ofstream out(path, std::ios::trunc);
    out << value << "\n";
    if (!out)
        log::warning("node", "cannot write " + path.string() + "; a restart will listen on another port");
}

std::vector<PeerAddress> peersOf(const coord::Assignment &a)
{
    std::vector<PeerAddress> peers;
    std::set<std::string> seen;
    auto add = [&](const coord::PeerRef &p) {
        if (!p.empty() && seen.insert(p.nodeId).second)
            peers.push_back({p.nodeId, p.address});
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

coord::NodeActivity activityOf(StageSession *session)
{
    if (!session)
        return coord::NodeActivity::Waiting;
    switch (session->phase()) {
    case StageSession::Phase::Training:
    case StageSession::Phase::Finishing:
        return coord::NodeActivity::Training;
    case StageSession::Phase::Failed:
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
    std::string lastError;
    bool refused = false;

    std::unique_ptr<device::Governor> governor; // outlives every session and link

    std::mutex sessionMutex; // the network thread routes messages to the session
    std::shared_ptr<StageSession> session;
    // Messages that came before this node's session existed: a neighbour that started its
    // stage sooner may already be sending activations, or averaging. Replayed, in order,
    // into the next session (which drops what is not for it).
    std::deque<std::pair<std::string, net::Message>> early;
    static constexpr size_t kMaxEarly = 512;

    void say(const std::string &text)
    {
        log::info("node", text);
        if (callbacks.message)
            callbacks.message(text);
    }
    std::shared_ptr<StageSession> currentSession()
    {
        std::lock_guard lock(sessionMutex);
        return session;
    }
    void setSession(std::shared_ptr<StageSession> s)
    {
        std::shared_ptr<StageSession> old;
        {
            std::lock_guard lock(sessionMutex);
            if (s)
                for (auto &[peer, m] : std::exchange(early, {}))
                    s->deliver(peer, std::move(m));
            old = std::exchange(session, std::move(s));
        }
        // The network thread may hold a copy for a moment (a message or link event in
        // flight). Let it finish, so that the destructor, which joins the stage's threads
        // and checkpoints, runs here and never stalls the network thread.
        for (int i = 0; old && old.use_count() > 1 && i < 5000; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        old.reset(); // checkpoints and joins, outside the lock
    }
    void route(const std::string &peer, net::Message &&m)
    {
        std::shared_ptr<StageSession> s;
        {
            std::lock_guard lock(sessionMutex);
            s = session;
            if (!s) {
                if (early.size() >= kMaxEarly)
                    early.pop_front();
                early.emplace_back(peer, std::move(m));
                return;
            }
        }
        s->deliver(peer, std::move(m));
    }
};

SwarmNode::SwarmNode(SwarmNodeSettings settings, Callbacks callbacks)
    : d(std::make_unique<Impl>())
{
    d->settings = std::move(settings);
    d->callbacks = std::move(callbacks);
    d->governor = std::make_unique<device::Governor>(d->settings.governor);
}

SwarmNode::~SwarmNode() = default;
device::Governor &SwarmNode::governor() { return *d->governor; }

SwarmNodeSummary SwarmNode::run(const std::atomic<bool> *stop)
{
    auto &s = d->settings;
    // Everything that can fail on bad input, before joining anything.
    const net::CoordinatorAddress address = net::CoordinatorAddress::parse(s.coordinator);
    ensurePrivateDirectory(s.dataDir);
    const net::Identity identity = net::Identity::loadOrCreate(s.dataDir);
    auto train = std::make_shared<data::ImageDataset>(data::loadFashionMnist(s.datasetDir, data::Split::Train));
    auto test = std::make_shared<data::ImageDataset>(data::loadFashionMnist(s.datasetDir, data::Split::Test));
    store::CheckpointStore checkpoints(s.dataDir / "rookery.db");
    device::Governor &governor = *d->governor;
    const auto profile = device::loadCapabilityProfile(s.dataDir, false);
    // Without --port, the port of the last run when it is still free: a node that
    // restarts keeps its address, so its neighbours' links simply reconnect.
    const auto portFile = s.dataDir / "peer-port";
    const uint16_t port = s.port ? s.port : freePort(s.bindAddress, uint16_t(readSmallNumber(portFile)));
    if (!s.port)
        writeSmallNumber(portFile, port);
    if (s.name.empty()) {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        s.name = host;
    }

    net::NetContext net;
    coord::CoordinatorClientConfig cc;
    cc.address = address;
    cc.name = s.name;
    cc.listenAddress = s.bindAddress + ":" + std::to_string(port);
    cc.profileJson = device::toJson(profile.profile);
    coord::CoordinatorClientEvents ce;
    ce.registered = [this](const coord::Registration &r) {
        std::lock_guard lock(d->mutex);
        d->registration = r;
        d->newAssignment = r.assignment;
        d->wake.notify_all();
    };
    ce.assignmentChanged = [this](const coord::Assignment &a) {
        std::lock_guard lock(d->mutex);
        d->newAssignment = a;
        d->wake.notify_all();
    };
    ce.error = [this](const std::string &text) {
        log::warning("node", "coordinator: " + text);
        std::lock_guard lock(d->mutex);
        d->lastError = text;
        d->wake.notify_all();
    };
    coord::CoordinatorClient client(net, cc, identity, ce);
    client.start();
    d->say("joining the swarm at " + address.host + ":" + std::to_string(address.port) + " as node " +
           identity.nodeId().substr(0, 12) + " (" + s.name + "), listening for peers on port " + std::to_string(port));

    SwarmNodeSummary summary;
    std::unique_ptr<PeerMesh> mesh;
    coord::RunConfig run;
    std::optional<coord::Assignment> current;
    auto lastWaitNote = Clock::now();
    std::optional<Clock::time_point> finishedAt;

    while (!(stop && stop->load())) {
        std::optional<coord::Assignment> incoming;
        {
            std::unique_lock lock(d->mutex);
            d->wake.wait_for(lock, std::chrono::milliseconds(250));
            if (d->registration && !mesh) {
                run = d->registration->run;
                PeerMesh::Config mc;
                mc.nodeId = identity.nodeId();
                mc.bindAddress = s.bindAddress;
                mc.port = port;
                mc.credentials = {d->registration->certificatePem, identity.privateKeyPem(),
                                  d->registration->caCertificatePem};
                // The governor's caps apply to every link (it outlives them).
                mc.link.upload = std::shared_ptr<TokenBucket>(std::shared_ptr<void>(), &governor.uploadLimiter());
                mc.link.download = std::shared_ptr<TokenBucket>(std::shared_ptr<void>(), &governor.downloadLimiter());
                PeerMesh::Events me;
                me.message = [this](const std::string &peer, net::Message &&m) { d->route(peer, std::move(m)); };
                me.link = [this](const std::string &peer, bool up) {
                    if (auto session = d->currentSession())
                        session->linkChanged(peer, up);
                    d->wake.notify_all();
                };
                me.writable = [this](const std::string &peer) {
                    if (auto session = d->currentSession())
                        session->writable(peer);
                };
                lock.unlock();
                mesh = std::make_unique<PeerMesh>(net, mc, me);
                d->say("registered: run '" + run.runId + "', model " + run.model.name + ", " +
                       std::to_string(run.totalSteps) + " steps");
                lock.lock();
            }
            if (mesh && d->newAssignment)
                incoming = std::exchange(d->newAssignment, std::nullopt);
        }
        if (!mesh) {
            if (Clock::now() - lastWaitNote > std::chrono::seconds(10)) {
                lastWaitNote = Clock::now();
                std::lock_guard lock(d->mutex);
                d->say("still waiting for the coordinator" + (d->lastError.empty() ? "" : ": " + d->lastError));
            }
            continue;
        }
        if (incoming && incoming->state != coord::AssignmentState::Stopped) {
            // A stage that has trained to the end keeps its place until it leaves:
            // re-plans made as the others leave are not new work for it.
            if (auto running = d->currentSession(); running && (running->phase() == StageSession::Phase::Finishing ||
                                                                running->phase() == StageSession::Phase::Finished))
                incoming.reset();
        }
        if (incoming) {
            const coord::Assignment &a = *incoming;
            const bool placementChanged = !current || !current->samePlacement(a);
            current = a;
            if (a.state == coord::AssignmentState::Stopped) {
                d->say("the coordinator stopped this node: " + a.reason);
                summary.reason = a.reason;
                break;
            }
            if (a.state == coord::AssignmentState::Waiting) {
                d->setSession(nullptr);
                d->say(a.reason.rfind("waiting", 0) == 0 ? a.reason : "waiting: " + a.reason);
            } else if (placementChanged || !d->currentSession()) {
                d->setSession(nullptr);
                mesh->setPeers(peersOf(a));
                d->say("assignment: " + a.describe());
                StageSessionConfig sc;
                sc.run = run;
                sc.assignment = a;
                sc.train = train;
                sc.test = test;
                sc.gate = &governor;
                sc.threads = governor.threadConfig();
                sc.checkpoints = &checkpoints;
                sc.keepCheckpoints = s.keepCheckpoints;
                sc.checkpointEvery = s.checkpointEvery;
                sc.evaluateEvery = s.evaluateEvery;
                try {
                    d->setSession(std::make_shared<StageSession>(
                        *mesh, sc,
                        StageSession::Callbacks{[this](const std::string &m) { d->say(m); }, d->callbacks.progress}));
                } catch (const Error &e) {
                    d->say(std::string("cannot start the assigned stage: ") + e.what());
                }
            }
        }
        auto session = d->currentSession();
        if (!session)
            continue;
        session->poke();
        const auto p = session->progress();
        coord::NodeReport report;
        report.samplesPerSecond = p.samplesPerSecond;
        report.step = p.step;
        report.loss = p.loss;
        report.activity = activityOf(session.get());
        report.samplesTotal = p.samplesTotal;
        report.busyFraction = p.busyFraction;
        client.report(report);
        summary.step = p.step;
        if (governor.status().state == device::GovernorState::Stopped) {
            summary.reason = governor.status().reason;
            d->say("stopping: " + summary.reason);
            break;
        }
        switch (session->phase()) {
        case StageSession::Phase::Finished: {
            summary.completed = true;
            summary.testAccuracy = p.testAccuracy;
            if (!s.exitWhenDone)
                break;
            // Stay while the stage before us may still ask for our final weights.
            if (!finishedAt)
                finishedAt = Clock::now();
            const bool previousGone = current->previous.empty() || !mesh->isUp(current->previous.nodeId);
            if (previousGone || Clock::now() - *finishedAt > std::chrono::seconds(180)) {
                summary.reason = "the run is complete";
                goto done;
            }
            break;
        }
        case StageSession::Phase::Failed: // poke() tries again; a stage that keeps failing ends the node
            if (session->failureCount() > 3) {
                summary.reason = session->lastStop();
                summary.failed = true;
                d->say("giving up after repeated failures: " + summary.reason);
                goto done;
            }
            break;
        default:
            break;
        }
    }
done:
    if (stop && stop->load() && summary.reason.empty())
        summary.reason = "stopped on request";
    d->setSession(nullptr); // checkpoints
    if (summary.completed)
        client.leave("the run is complete");
    else
        client.stop(); // the coordinator keeps our place for a quick restart
    mesh.reset();
    return summary;
}

} // namespace rookery::node
