// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/coordinator.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <unistd.h>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/log.h"
#include "engine/common/paths.h"
#include "engine/coord/assignment_builder.h"
#include "engine/coord/coord_json.h"
#include "engine/coord/coordinator_identity.h"
#include "engine/coord/coordinator_metrics.h"
#include "engine/coord/coordinator_store.h"
#include "engine/coord/node_registry.h"
#include "engine/coord/plan_state.h"
#include "engine/coord/status_json.h"
#include "engine/coord/status_server.h"
#include "engine/coord/wire_convert.h"
#include "engine/net/listener.h"

namespace rookery::coord {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char *kArea = "coord";

int64_t unixMillis()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string newRunId()
{
    const std::time_t t = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&t, &utc);
    char buf[32];
    std::strftime(buf, sizeof buf, "run-%Y%m%d-%H%M%S", &utc);
    return buf;
}

swarm::PlanModel planModelOf(const RunConfig &run)
{
    double copies = 0;
    if (run.optimizer.kind == train::OptimizerKind::AdamW)
        copies = 2;
    else if (run.optimizer.momentum != 0)
        copies = 1;
    return {run.model, run.microbatch, copies};
}

bool sameRun(RunConfig a, RunConfig b)
{
    a.runId = b.runId = "";
    return a == b;
}

std::string hostForAddress(const CoordinatorSettings &s)
{
    std::string host = s.publicHost;
    if (host.empty()) {
        host = s.bindAddress;
        if (host == "0.0.0.0" || host == "::") {
            char name[256] = {};
            host = gethostname(name, sizeof name - 1) == 0 && name[0] ? name : "127.0.0.1";
        }
    }
    return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

} // namespace

struct Coordinator::Impl
{
    struct Pending
    {
        bool leave = false;
        bool join = false;
        swarm::Capacity capacity;
    };

    explicit Impl(CoordinatorSettings s);
    void start();
    void stop();
    void restore(const StoredState &stored);
    void work();
    void maybePlan(Clock::time_point now);
    void round(Clock::time_point now, std::map<std::string, Pending> events, bool republish, bool full);
    void publishPlacements();
    StatusDocument statusDocument();
    StatusInputs statusInputs();

    void enqueueJoin(const std::string &id, const swarm::Capacity &c)
    {
        std::lock_guard lock(inboxMutex);
        auto &p = pending[id];
        p.join = true;
        p.capacity = c;
    }
    void enqueueLeave(const std::string &id)
    {
        std::lock_guard lock(inboxMutex);
        auto &p = pending[id];
        p.join = false; // joined and left before the planner saw it: nothing to place
        p.leave = true;
    }

    CoordinatorSettings settings;
    const Clock::time_point startedAt = Clock::now();
    CoordinatorIdentity identity;
    CoordinatorStore store;
    RunConfig run;
    ReplayGuard replay;

    // The planner's own state: touched by the worker thread only (and the constructor).
    PlanState plan;
    std::map<std::string, Assignment> published; ///< what the planner last handed out, by node
    std::optional<Clock::time_point> holdSince;  ///< since when the volunteers could hold the model
    Clock::time_point lastRound;

    std::mutex inboxMutex;
    std::condition_variable inboxWake;
    std::map<std::string, Pending> pending;
    bool republish = false, fullReplan = false, stopping = false;

    std::unique_ptr<NodeRegistry> registry;
    std::atomic<uint64_t> statusVersion{1};
    std::atomic<uint64_t> planRounds{0};
    std::mutex summaryMutex;
    PlanSummary summary;
    std::mutex statusMutex;
    std::shared_ptr<const std::string> statusCache;
    uint64_t cacheVersion = 0;
    Clock::time_point cacheAt;

    // Declared after everything their threads call into, so destroyed before it.
    std::unique_ptr<net::NetContext> net;
    std::unique_ptr<net::Listener> listener;
    std::unique_ptr<StatusServer> status;
    std::thread worker;
    std::string host;
    bool stopped = false;
};

Coordinator::Impl::Impl(CoordinatorSettings s)
    : settings(std::move(s))
    , identity((ensurePrivateDirectory(settings.dataDir),
                CoordinatorIdentity::loadOrCreate(settings.dataDir, settings.swarmName)))
    , store(settings.dataDir / "rookery.db")
    , run((validate(settings.run), settings.run))
    , plan(planModelOf(run), {run.seed, settings.planPopulation, settings.planGenerations, settings.clusterSize})
{
    const StoredState stored = store.load();
    RegistryConfig rc;
    rc.heartbeatInterval = settings.heartbeatInterval;
    rc.heartbeatTimeout = settings.heartbeatTimeout;
    rc.rejoinGrace = settings.rejoinGrace;
    RegistryHooks hooks;
    hooks.join = [this](const std::string &id, const swarm::Capacity &c) { enqueueJoin(id, c); };
    hooks.leave = [this](const std::string &id) { enqueueLeave(id); };
    hooks.addressesChanged = [this] {
        std::lock_guard lock(inboxMutex);
        republish = true;
    };
    hooks.changed = [this] { ++statusVersion; };
    restore(stored); // settles run.runId
    rc.runId = run.runId;
    rc.run = toWire(run);
    registry = std::make_unique<NodeRegistry>(rc, identity.ca, &store, replay, std::move(hooks));
    registry->restore(stored, plan.ids(), settings.restartGrace);
    summary = summarize(plan);
}

// Resumes the stored run when the operator asks for the same one; else starts afresh.
void Coordinator::Impl::restore(const StoredState &stored)
{
    for (const auto &[nonce, at] : stored.nonces)
        replay.admit(nonce, at);
    std::optional<RunConfig> previous;
    if (stored.run) {
        try {
            previous = runConfigFromJson(stored.run->configJson);
        } catch (const Error &e) {
            log::warning(kArea, std::string("ignoring the stored run: ") + e.what());
        }
    }
    if (previous && sameRun(*previous, run)) {
        run.runId = stored.run->id;
        std::map<std::string, swarm::Capacity> capacities;
        for (const auto &v : stored.volunteers) {
            try {
                capacities.emplace(v.nodeId, capacityOf(v.profileJson, v.uploadBytesPerSecond > 0
                                                                           ? v.uploadBytesPerSecond
                                                                           : kDefaultUploadBytesPerSecond));
            } catch (const Error &) { }
        }
        if (!stored.run->planJson.empty()) {
            try {
                plan = PlanState::fromJson(
                    planModelOf(run),
                    {run.seed, settings.planPopulation, settings.planGenerations, settings.clusterSize},
                    stored.run->planJson, capacities);
            } catch (const Error &e) {
                log::warning(kArea, std::string("cannot restore the stored plan; planning afresh: ") + e.what());
            }
        }
        for (const auto &[id, a] : stored.assignments)
            if (plan.contains(id))
                published.emplace(id, a);
        log::info(kArea, "resuming " + run.runId + ": " + std::to_string(stored.volunteers.size()) +
                             " known volunteers, " + std::to_string(plan.size()) + " in the plan");
        return;
    }
    run.runId = newRunId();
    if (previous)
        log::warning(kArea, "the run configuration differs from the stored run " + stored.run->id + "; starting " +
                                run.runId + " with a fresh plan");
    store.saveRun({run.runId, unixMillis(), toJson(run), ""});
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
    lc.link.limits = coordinatorLinkLimits();
    lc.maxLinks = settings.maxNodes + 64;
    net::LinkEvents events;
    NodeRegistry *r = registry.get();
    events.opened = [r](const std::shared_ptr<net::Link> &l) { r->opened(l); };
    events.message = [r](const std::shared_ptr<net::Link> &l, net::Message &&m) { r->message(l, std::move(m)); };
    events.closed = [r](const std::shared_ptr<net::Link> &l, const net::CloseInfo &) { r->closed(l); };
    listener = std::make_unique<net::Listener>(*net, lc, events);
    StatusServerConfig sc;
    sc.bindAddress = settings.bindAddress;
    sc.port = settings.statusPort;
    sc.credentials = lc.credentials;
    sc.feedInterval = settings.statusFeedInterval;
    status = std::make_unique<StatusServer>(
        *net, sc, [this] { return statusDocument(); }, [this] { return coordinatorMetrics(statusInputs()); });
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
    if (net)
        net->stop();
    store.saveMetrics(registry->takeMetrics(unixMillis()));
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
            maybePlan(now);
            if (now >= nextMetrics) {
                nextMetrics = now + settings.metricsInterval;
                const int64_t ms = unixMillis();
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

void Coordinator::Impl::maybePlan(Clock::time_point now)
{
    std::map<std::string, Pending> events;
    bool rep = false, full = false;
    {
        std::lock_guard lock(inboxMutex);
        const bool due = (!pending.empty() || republish || fullReplan) && now - lastRound >= settings.planInterval;
        const bool firstDue = !plan.isWorking() && holdSince && now - *holdSince >= settings.firstPlanDelay;
        if (!due && !firstDue)
            return;
        events = std::exchange(pending, {});
        rep = std::exchange(republish, false);
        full = std::exchange(fullReplan, false);
    }
    lastRound = now;
    round(now, std::move(events), rep, full);
}

void Coordinator::Impl::round(Clock::time_point now, std::map<std::string, Pending> events, bool, bool full)
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
        if (now - *holdSince >= settings.firstPlanDelay || everyoneHere)
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
    publishPlacements();
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

void Coordinator::Impl::publishPlacements()
{
    auto fresh = buildAssignments(plan.placements(), registry->addresses(), published);
    std::map<std::string, Assignment> changed;
    for (const auto &[id, a] : fresh)
        if (const auto it = published.find(id); it == published.end() || !it->second.samePlacement(a))
            changed.emplace(id, a);
    published = std::move(fresh);
    registry->publish(changed);
}

StatusDocument Coordinator::Impl::statusDocument()
{
    const uint64_t version = statusVersion.load();
    std::lock_guard lock(statusMutex);
    const auto now = Clock::now();
    if (!statusCache || cacheVersion != version || now - cacheAt > std::chrono::milliseconds(500)) {
        statusCache = std::make_shared<const std::string>(coord::statusJson(statusInputs()));
        cacheVersion = version;
        cacheAt = now;
    }
    return {version, statusCache};
}

StatusInputs Coordinator::Impl::statusInputs()
{
    StatusInputs in;
    in.swarm = settings.swarmName;
    in.address = "wss://" + host + ":" + std::to_string(listener->port()) + "/#sha256=" + identity.fingerprint;
    in.run = run;
    {
        std::lock_guard s(summaryMutex);
        in.plan = summary;
    }
    in.nodes = registry->snapshot();
    in.counters = registry->counters();
    in.uptimeMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - startedAt).count();
    in.timeMs = unixMillis();
    return in;
}

Coordinator::Coordinator(CoordinatorSettings settings)
    : m(std::make_unique<Impl>(std::move(settings)))
{
    m->start();
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
    a.host = m->host.front() == '[' ? m->host.substr(1, m->host.size() - 2) : m->host;
    a.port = port();
    a.path = "/";
    a.sha256 = m->identity.fingerprint;
    return a;
}

uint16_t Coordinator::port() const { return m->listener->port(); }
uint16_t Coordinator::statusPort() const { return m->status->port(); }
const std::string &Coordinator::certificatePem() const { return m->identity.certificatePem; }
const std::string &Coordinator::caCertificatePem() const { return m->identity.ca.certificatePem(); }
const RunConfig &Coordinator::run() const { return m->run; }
std::string Coordinator::statusJson() const { return *m->statusDocument().json; }

CoordinatorCounters Coordinator::counters() const
{
    const auto c = m->registry->counters();
    const auto nodes = m->registry->snapshot();
    bool planned;
    {
        std::lock_guard lock(m->summaryMutex);
        planned = m->summary.hasPlan;
    }
    return {
        c.registrations, c.refusals, c.heartbeats, c.assignmentPushes, m->planRounds.load(), m->registry->onlineCount(),
        nodes.size(),    planned};
}

std::map<std::string, Assignment> Coordinator::assignments() const { return m->registry->assignments(); }

void Coordinator::requestFullReplan()
{
    std::lock_guard lock(m->inboxMutex);
    m->fullReplan = true;
}

} // namespace rookery::coord
