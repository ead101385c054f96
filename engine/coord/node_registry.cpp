// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/node_registry.h"

#include <algorithm>
#include <set>
#include <variant>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/coord/wire_convert.h"
#include "engine/net/identity.h"

namespace rookery::coord {
namespace {

constexpr const char *kArea = "coord";

int64_t unixMillis()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string shortId(const std::string &id) { return id.substr(0, 12); }

std::string millis(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

// An assignment that places the node nowhere.
Assignment unplaced(uint64_t version, AssignmentState state, std::string reason)
{
    Assignment a;
    a.version = version;
    a.state = state;
    a.reason = std::move(reason);
    return a;
}

} // namespace

std::string_view presenceName(Presence p)
{
    switch (p) {
    case Presence::Online:
        return "online";
    case Presence::Lost:
        return "lost";
    case Presence::Gone:
        return "gone";
    case Presence::Left:
        return "left";
    }
    return "?";
}

Presence presenceFromName(std::string_view name)
{
    for (auto p : {Presence::Online, Presence::Lost, Presence::Gone, Presence::Left})
        if (presenceName(p) == name)
            return p;
    return Presence::Gone;
}

struct NodeRegistry::Record
{
    std::string nodeId, name, listenAddress, profileJson, software, certificatePem;
    double uploadBytesPerSecond = 0;
    swarm::Capacity capacity;
    bool assumedBandwidth = false;
    Presence presence = Presence::Online;
    std::weak_ptr<net::Link> link;
    Clock::time_point lastSeen, graceUntil, lastPush;
    int64_t firstSeenMs = 0, lastSeenMs = 0;
    Assignment assignment;
    bool inPlanner = false;
    NodeReport report;
    bool reportFresh = false;
    uint64_t heartbeats = 0;
};

// Messages to send and links to close once the lock is released: encoding a whole
// assignment takes long enough that heartbeats should not wait for it.
struct NodeRegistry::Outbox
{
    using Item = std::variant<net::Message, std::shared_ptr<const Assignment>>;
    std::vector<std::pair<std::shared_ptr<net::Link>, Item>> sends;
    std::vector<std::pair<std::shared_ptr<net::Link>, std::string>> closes;

    void send(std::shared_ptr<net::Link> link, Item item)
    {
        if (link)
            sends.emplace_back(std::move(link), std::move(item));
    }
    void close(std::shared_ptr<net::Link> link, std::string reason)
    {
        if (link)
            closes.emplace_back(std::move(link), std::move(reason));
    }
    void flush()
    {
        for (auto &[link, item] : sends) {
            const net::Message m = std::holds_alternative<net::Message>(item)
                                       ? std::move(std::get<net::Message>(item))
                                       : net::Message(net::AssignmentUpdate{toWire(*std::get<1>(item))});
            if (link->send(m) == net::SendResult::QueueFull)
                log::warning(kArea, "link " + link->describe() + " is backed up; a message was dropped");
        }
        for (auto &[link, reason] : closes)
            link->close(reason);
    }
};

NodeRegistry::NodeRegistry(RegistryConfig config, const net::CertificateAuthority &ca, CoordinatorStore *store,
                           ReplayGuard &replay, RegistryHooks hooks)
    : m_config(std::move(config))
    , m_ca(ca)
    , m_store(store)
    , m_replay(replay)
    , m_hooks(std::move(hooks))
{ }

NodeRegistry::~NodeRegistry() = default;

void NodeRegistry::restore(const StoredState &state, const std::vector<std::string> &planned,
                           std::chrono::milliseconds grace)
{
    const std::set<std::string> inPlan(planned.begin(), planned.end());
    const auto now = Clock::now();
    std::lock_guard lock(m_mutex);
    for (const auto &v : state.volunteers) {
        auto r = std::make_unique<Record>();
        r->nodeId = v.nodeId;
        r->name = v.name;
        r->listenAddress = v.listenAddress;
        r->profileJson = v.profileJson;
        r->software = v.software;
        r->certificatePem = v.certificatePem;
        r->uploadBytesPerSecond = v.uploadBytesPerSecond;
        r->assumedBandwidth = v.uploadBytesPerSecond == 0;
        try {
            r->capacity =
                capacityOf(v.profileJson, r->assumedBandwidth ? kDefaultUploadBytesPerSecond : v.uploadBytesPerSecond);
        } catch (const Error &e) {
            log::warning(kArea, "forgetting stored node " + shortId(v.nodeId) + ": " + e.what());
            continue;
        }
        r->firstSeenMs = v.firstSeenMs;
        r->lastSeenMs = v.lastSeenMs;
        if (const auto it = state.assignments.find(v.nodeId); it != state.assignments.end())
            r->assignment = it->second;
        r->inPlanner = inPlan.count(v.nodeId) > 0;
        const Presence stored = presenceFromName(v.presence);
        if (r->inPlanner && (stored == Presence::Online || stored == Presence::Lost)) {
            r->presence = Presence::Lost;
            r->graceUntil = now + grace;
            if (!r->assignment.isTraining()) { // waiting nodes hold nothing worth keeping
                m_hooks.leave(r->nodeId);
                r->inPlanner = false;
            }
        } else {
            r->presence = stored == Presence::Left ? Presence::Left : Presence::Gone;
            if (r->inPlanner)
                m_hooks.leave(r->nodeId);
            r->inPlanner = false;
        }
        m_nodes.emplace(v.nodeId, std::move(r));
    }
}

void NodeRegistry::opened(const std::shared_ptr<net::Link> &link)
{
    log::debug(kArea, "link " + link->describe() + " open; waiting for its registration");
}

void NodeRegistry::message(const std::shared_ptr<net::Link> &link, net::Message &&message)
{
    Outbox out;
    if (auto *r = std::get_if<net::Register>(&message)) {
        onRegister(link, *r, out);
    } else if (auto *h = std::get_if<net::Heartbeat>(&message)) {
        onHeartbeat(link, *h, out);
    } else if (auto *l = std::get_if<net::Leave>(&message)) {
        onLeave(link, *l);
    } else {
        std::lock_guard lock(m_mutex);
        refuse(link, net::CoordinatorErrorCode::BadRequest,
               "a coordinator does not accept " + std::string(net::messageName(message)) + " messages", out);
    }
    out.flush();
}

void NodeRegistry::refuse(const std::shared_ptr<net::Link> &link, net::CoordinatorErrorCode code,
                          const std::string &reason, Outbox &out)
{
    ++m_counters.refusals;
    log::warning(kArea, "refused " + link->describe() + ": " + reason);
    m_linkNode.erase(link.get());
    out.send(link, net::Message(net::CoordinatorError{code, reason}));
    out.close(link, reason);
}

void NodeRegistry::onRegister(const std::shared_ptr<net::Link> &link, const net::Register &r, Outbox &out)
{
    const int64_t nowMs = unixMillis();
    const std::string nodeId = link->peer().nodeId;
    CheckedRegistration c;
    std::string certificate;
    try {
        c = checkRegistration(r, link->peer().address, nowMs);
        if (nodeId.empty())
            throw Refusal{net::CoordinatorErrorCode::BadRequest, "the link has no node id"};
        std::string keyId;
        try {
            keyId = net::publicKeyFingerprint(r.publicKeyPem);
        } catch (const Error &) {
            throw Refusal{net::CoordinatorErrorCode::BadRequest, "the registration's public key is not a PEM key"};
        }
        if (keyId != nodeId)
            throw Refusal{net::CoordinatorErrorCode::BadRequest,
                          "the registration's public key (node " + shortId(keyId) +
                              ") is not the key this link's certificate proved (node " + shortId(nodeId) + ")"};
        if (!m_replay.admit(r.nonce, nowMs))
            throw Refusal{net::CoordinatorErrorCode::Replay,
                          "the registration nonce was seen before: a replayed registration"};
        if (m_store)
            m_store->saveNonce(r.nonce, nodeId, nowMs);
        certificate = m_ca.issue(r.publicKeyPem, m_config.certificateValidity);
    } catch (const Refusal &f) {
        std::lock_guard lock(m_mutex);
        return refuse(link, f.code, f.reason, out);
    }
    std::lock_guard lock(m_mutex);
    auto &slot = m_nodes[nodeId];
    const bool fresh = !slot;
    if (fresh) {
        slot = std::make_unique<Record>();
        slot->nodeId = nodeId;
        slot->firstSeenMs = nowMs;
        slot->assignment.version = 1;
        slot->assignment.reason = "waiting: registered; the planner has not placed this node yet";
    }
    Record &rec = *slot;
    if (auto old = rec.link.lock(); old && old != link) {
        m_linkNode.erase(old.get());
        out.close(old, "replaced by a newer connection of the same node");
    }
    m_linkNode[link.get()] = nodeId;
    const bool moved = !fresh && rec.listenAddress != c.listenAddress;
    rec.name = c.name.empty() ? "node-" + shortId(nodeId) : c.name;
    rec.listenAddress = c.listenAddress;
    rec.profileJson = r.profileJson;
    rec.software = r.software;
    rec.certificatePem = certificate;
    rec.uploadBytesPerSecond = r.uploadBytesPerSecond;
    rec.assumedBandwidth = c.assumedBandwidth;
    rec.link = link;
    rec.lastSeen = Clock::now();
    rec.lastSeenMs = nowMs;
    const Presence was = rec.presence;
    rec.presence = Presence::Online;
    if (!rec.inPlanner) {
        rec.capacity = c.capacity; // a node keeps the capacity it was placed with
        rec.inPlanner = true;
        m_hooks.join(nodeId, rec.capacity);
    } else if (moved) {
        m_hooks.addressesChanged();
    }
    m_hooks.changed();
    ++m_counters.registrations;
    log::info(kArea, std::string(fresh ? "registered" : "re-registered") + " node " + shortId(nodeId) + " '" +
                         rec.name + "' at " + rec.listenAddress +
                         (fresh ? "" : " (was " + std::string(presenceName(was)) + ")"));
    out.send(link,
             net::Message(net::RegisterReply{nodeId, certificate, m_ca.certificatePem(), m_config.run,
                                             toWire(rec.assignment), uint32_t(m_config.heartbeatInterval.count())}));
    persist(rec);
}

void NodeRegistry::onHeartbeat(const std::shared_ptr<net::Link> &link, const net::Heartbeat &h, Outbox &out)
{
    std::lock_guard lock(m_mutex);
    const auto it = m_linkNode.find(link.get());
    if (it == m_linkNode.end()) {
        const std::string id = link->peer().nodeId;
        if (m_nodes.count(id))
            return refuse(link, net::CoordinatorErrorCode::NotRegistered,
                          "node " + shortId(id) + " has not registered on this connection: send Register first", out);
        return refuse(link, net::CoordinatorErrorCode::UnknownNode,
                      "unknown node " + shortId(id) + ": it never registered with this coordinator", out);
    }
    Record &rec = *m_nodes.at(it->second);
    const auto now = Clock::now();
    rec.lastSeen = now;
    rec.lastSeenMs = unixMillis();
    rec.report = fromWire(h.metrics);
    rec.reportFresh = true;
    ++rec.heartbeats;
    ++m_counters.heartbeats;
    out.send(link, net::Message(net::HeartbeatAck{h.seq, rec.assignment.version}));
    // The node missed an update (or it crossed this heartbeat): send it again, at most
    // once per interval.
    if (h.assignmentVersion < rec.assignment.version && now - rec.lastPush > m_config.heartbeatInterval) {
        rec.lastPush = now;
        out.send(link, std::make_shared<const Assignment>(rec.assignment));
    }
}

void NodeRegistry::onLeave(const std::shared_ptr<net::Link> &link, const net::Leave &l)
{
    std::lock_guard lock(m_mutex);
    const auto it = m_linkNode.find(link.get());
    if (it == m_linkNode.end())
        return;
    Record &rec = *m_nodes.at(it->second);
    m_linkNode.erase(it);
    log::info(kArea, "node " + shortId(rec.nodeId) + " '" + rec.name + "' leaves: " + l.reason);
    rec.presence = Presence::Left;
    if (rec.inPlanner)
        m_hooks.leave(rec.nodeId);
    rec.inPlanner = false;
    rec.assignment = unplaced(rec.assignment.version + 1, AssignmentState::Stopped, "left: " + l.reason);
    m_hooks.changed();
    persist(rec);
}

void NodeRegistry::closed(const std::shared_ptr<net::Link> &link)
{
    std::lock_guard lock(m_mutex);
    const auto it = m_linkNode.find(link.get());
    if (it == m_linkNode.end())
        return;
    Record &rec = *m_nodes.at(it->second);
    m_linkNode.erase(it);
    if (rec.presence == Presence::Online)
        lose(rec, Clock::now(), "its link closed");
}

void NodeRegistry::lose(Record &rec, Clock::time_point now, const std::string &why)
{
    rec.presence = Presence::Lost;
    rec.graceUntil = now + m_config.rejoinGrace;
    rec.link.reset();
    if (rec.inPlanner && !rec.assignment.isTraining()) { // it holds nothing: no reason to wait for it
        m_hooks.leave(rec.nodeId);
        rec.inPlanner = false;
    }
    log::info(kArea, "lost node " + shortId(rec.nodeId) + " '" + rec.name + "': " + why + "; it keeps its place for " +
                         millis(m_config.rejoinGrace));
    m_hooks.changed();
    persist(rec);
}

void NodeRegistry::tick(Clock::time_point now)
{
    Outbox out;
    {
        std::lock_guard lock(m_mutex);
        for (auto &[id, r] : m_nodes) {
            Record &rec = *r;
            if (rec.presence == Presence::Online && now - rec.lastSeen > m_config.heartbeatTimeout) {
                auto link = rec.link.lock();
                if (link)
                    m_linkNode.erase(link.get());
                const std::string why = "no heartbeat for " + millis(m_config.heartbeatTimeout);
                out.close(link, why);
                lose(rec, now, why);
            } else if (rec.presence == Presence::Lost && now >= rec.graceUntil) {
                rec.presence = Presence::Gone;
                if (rec.inPlanner)
                    m_hooks.leave(id);
                rec.inPlanner = false;
                rec.assignment = unplaced(rec.assignment.version + 1, AssignmentState::Waiting,
                                          "gone: no contact for longer than the rejoin grace period");
                log::info(kArea, "node " + shortId(id) + " '" + rec.name + "' is gone; re-planning without it");
                m_hooks.changed();
                persist(rec);
            }
        }
    }
    out.flush();
}

void NodeRegistry::publish(const std::map<std::string, Assignment> &changed)
{
    Outbox out;
    {
        std::lock_guard lock(m_mutex);
        const auto now = Clock::now();
        for (const auto &[id, a] : changed) {
            const auto it = m_nodes.find(id);
            if (it == m_nodes.end() || !it->second->inPlanner)
                continue; // gone meanwhile; the planner hears of it next round
            Record &rec = *it->second;
            const uint64_t version = rec.assignment.version + 1;
            rec.assignment = a;
            rec.assignment.version = version;
            auto shared = std::make_shared<const Assignment>(rec.assignment);
            if (m_store)
                m_store->saveAssignment(m_config.runId, id, shared);
            if (rec.presence == Presence::Online) {
                rec.lastPush = now;
                ++m_counters.assignmentPushes;
                out.send(rec.link.lock(), std::move(shared));
            }
        }
        if (!changed.empty())
            m_hooks.changed();
    }
    out.flush();
}

std::map<std::string, std::string> NodeRegistry::addresses() const
{
    std::lock_guard lock(m_mutex);
    std::map<std::string, std::string> out;
    for (const auto &[id, r] : m_nodes)
        out.emplace_hint(out.end(), id, r->listenAddress);
    return out;
}

std::vector<StoredMetric> NodeRegistry::takeMetrics(int64_t nowMs)
{
    std::lock_guard lock(m_mutex);
    std::vector<StoredMetric> out;
    for (auto &[id, r] : m_nodes)
        if (r->reportFresh) {
            out.push_back({id, nowMs, r->report});
            r->reportFresh = false;
        }
    return out;
}

std::vector<NodeStatus> NodeRegistry::snapshot() const
{
    std::lock_guard lock(m_mutex);
    const auto now = Clock::now();
    std::vector<NodeStatus> out;
    out.reserve(m_nodes.size());
    for (const auto &[id, r] : m_nodes) {
        const auto &a = r->assignment;
        const int64_t ago = r->presence == Presence::Online
                                ? std::chrono::duration_cast<std::chrono::milliseconds>(now - r->lastSeen).count()
                                : std::max<int64_t>(0, unixMillis() - r->lastSeenMs);
        out.push_back({id, r->name, r->listenAddress, r->software, r->presence, r->capacity, r->assumedBandwidth,
                       a.state, a.version, a.cluster, a.stage, a.firstLayer, a.lastLayer, r->report, ago,
                       r->heartbeats});
    }
    return out;
}

RegistryCounters NodeRegistry::counters() const
{
    std::lock_guard lock(m_mutex);
    return m_counters;
}

size_t NodeRegistry::onlineCount() const
{
    std::lock_guard lock(m_mutex);
    return size_t(std::count_if(m_nodes.begin(), m_nodes.end(),
                                [](const auto &e) { return e.second->presence == Presence::Online; }));
}

std::map<std::string, Assignment> NodeRegistry::assignments() const
{
    std::lock_guard lock(m_mutex);
    std::map<std::string, Assignment> out;
    for (const auto &[id, r] : m_nodes)
        out.emplace(id, r->assignment);
    return out;
}

void NodeRegistry::persist(const Record &r) const
{
    if (m_store)
        m_store->saveVolunteer({r.nodeId, r.name, r.listenAddress, r.profileJson, r.uploadBytesPerSecond,
                                r.certificatePem, r.software, r.firstSeenMs, r.lastSeenMs,
                                std::string(presenceName(r.presence))});
}

} // namespace rookery::coord
