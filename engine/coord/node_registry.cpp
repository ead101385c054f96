// SPDX-License-Identifier: GPL-3.0-or-later
// NodeRegistry's state: restoring it, publishing the planner's assignments, persisting
// and viewing it. Link events are in node_registry_links.cpp, timeouts in
// node_registry_timeouts.cpp.
#include "engine/coord/node_registry.h"

#include <algorithm>
#include <set>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/wall_clock.h"
#include "engine/coord/node_registry_record.h"
#include "engine/coord/wire_convert.h"

namespace rookery::coord {

using namespace registry_detail;

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
    case Presence::Quarantined:
        return "quarantined";
    }
    return "?";
}

Presence presenceFromName(std::string_view name)
{
    for (auto p : {Presence::Online, Presence::Lost, Presence::Gone, Presence::Left, Presence::Quarantined})
        if (presenceName(p) == name)
            return p;
    return Presence::Gone;
}

std::string_view reachabilityName(Reachability r)
{
    switch (r) {
    case Reachability::Unknown:
        return "unknown";
    case Reachability::Checking:
        return "checking";
    case Reachability::Direct:
        return "direct";
    case Reachability::Unreachable:
        return "unreachable";
    }
    return "?";
}

void NodeRegistry::Outbox::flush()
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

NodeRegistry::NodeRegistry(RegistryConfig config, const net::CertificateAuthority &ca, CoordinatorStore *store,
                           ReplayGuard &replay, RegistryHooks hooks)
    : m_config(std::move(config))
    , m_ca(ca)
    , m_store(store)
    , m_replay(replay)
    , m_hooks(std::move(hooks))
    , m_pace(m_config.heartbeatInterval)
    , m_limits(m_config.addressLimits)
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
        if (const auto it = state.assignments.find(v.nodeId); it != state.assignments.end()) {
            r->assignment = it->second;
            // The last verdict stands until the node is checked again: who dials whom
            // stays as it was across a coordinator restart.
            if (r->assignment.unreachable) {
                r->reachability = Reachability::Unreachable;
                r->capacity.reachable = false;
            }
        }
        r->inPlanner = inPlan.count(v.nodeId) > 0;
        const Presence stored = presenceFromName(v.presence);
        if (r->inPlanner && (stored == Presence::Online || stored == Presence::Lost)) {
            r->presence = Presence::Lost;
            r->graceUntil = now + grace;
            r->lostWithCoordinator = true;     // it trains on with its peers meanwhile: not away
            if (!r->assignment.isTraining()) { // waiting nodes hold nothing worth keeping
                m_hooks.leave(r->nodeId);
                r->inPlanner = false;
            }
        } else {
            r->presence = stored == Presence::Left || stored == Presence::Quarantined ? stored : Presence::Gone;
            if (r->presence == Presence::Quarantined)
                m_banned.nodeIds.push_back(r->nodeId);
            if (r->inPlanner)
                m_hooks.leave(r->nodeId);
            r->inPlanner = false;
        }
        m_nodes.emplace(v.nodeId, std::move(r));
    }
}
std::vector<std::string> NodeRegistry::publish(const std::map<std::string, Assignment> &changed, bool deferVerdicts)
{
    std::vector<std::string> deferred;
    Outbox out;
    {
        std::lock_guard lock(m_mutex);
        const auto now = Clock::now();
        for (const auto &[id, a] : changed) {
            const auto it = m_nodes.find(id);
            if (it == m_nodes.end() || !it->second->inPlanner)
                continue; // gone meanwhile; the planner hears of it next round
            Record &rec = *it->second;
            // Waiting stays waiting: a new reason is for people (the status shows it), not
            // worth a push to every newcomer of a registration storm. But a newcomer told
            // that its check is under way hears how the check ended and why it waits:
            // else it would say "checking" for as long as it waits.
            if (a.state == AssignmentState::Waiting && a.cluster < 0 &&
                rec.assignment.state == AssignmentState::Waiting && rec.assignment.cluster < 0) {
                const bool news =
                    rec.assignment.reason == kCheckingReachability || rec.assignment.unreachable != a.unreachable;
                if (!news)
                    continue;
                if (deferVerdicts) {
                    deferred.push_back(id);
                    continue;
                }
            }
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
    return deferred;
}

void NodeRegistry::setReachability(const std::string &nodeId, const std::string &address, bool reachable,
                                   const std::string &note)
{
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_nodes.find(nodeId);
        if (it == m_nodes.end() || it->second->listenAddress != address)
            return; // it moved since: a newer check is under way
        Record &r = *it->second;
        const Reachability verdict = reachable ? Reachability::Direct : Reachability::Unreachable;
        // Peers decide who dials by it: re-publish when it moves to or from unreachable,
        // and after a first verdict (a first plan may wait for it).
        if ((verdict == Reachability::Unreachable) != (r.reachability == Reachability::Unreachable) ||
            r.reachability == Reachability::Checking)
            m_hooks.addressesChanged();
        r.reachability = verdict;
        r.reachabilityNote = note;
        if (r.capacity.reachable != reachable) {
            r.capacity.reachable = reachable;
            if (r.inPlanner) // the planner puts it next to reachable neighbours where it can
                m_hooks.join(nodeId, r.capacity);
        }
        if (r.awaitingVerdict)
            placeAfterVerdict(r);
        if (reachable)
            log::info(kArea, "node " + shortId(nodeId) + " '" + r.name + "': " + note);
        else
            log::warning(kArea, "node " + shortId(nodeId) + " '" + r.name + "': " + note);
    }
    m_hooks.changed();
}

std::set<std::string> NodeRegistry::unreachable() const
{
    std::lock_guard lock(m_mutex);
    std::set<std::string> out;
    for (const auto &[id, r] : m_nodes)
        if (r->reachability == Reachability::Unreachable)
            out.insert(out.end(), id);
    return out;
}

std::set<std::string> NodeRegistry::away() const
{
    std::lock_guard lock(m_mutex);
    std::set<std::string> out;
    for (const auto &[id, r] : m_nodes)
        if (r->away())
            out.insert(out.end(), id);
    return out;
}

std::set<std::string> NodeRegistry::reachedStep(int64_t steps) const
{
    std::lock_guard lock(m_mutex);
    std::set<std::string> out;
    for (const auto &[id, r] : m_nodes)
        if (r->report.step >= steps)
            out.insert(out.end(), id);
    return out;
}

size_t NodeRegistry::checkingCount() const
{
    std::lock_guard lock(m_mutex);
    return size_t(std::count_if(m_nodes.begin(), m_nodes.end(), [](const auto &e) {
        return e.second->presence == Presence::Online && e.second->reachability == Reachability::Checking;
    }));
}

std::map<std::string, std::string> NodeRegistry::addresses() const
{
    std::lock_guard lock(m_mutex);
    std::map<std::string, std::string> out;
    for (const auto &[id, r] : m_nodes)
        out.emplace_hint(out.end(), id, r->listenAddress);
    return out;
}

std::vector<StoredMetric> NodeRegistry::takeMetrics(int64_t atMs)
{
    std::lock_guard lock(m_mutex);
    std::vector<StoredMetric> out;
    for (auto &[id, r] : m_nodes)
        if (r->reportFresh) {
            out.push_back({id, atMs, r->report});
            r->reportFresh = false;
        }
    return out;
}

std::map<std::string, std::map<std::string, double>> NodeRegistry::takeMeasuredLinks()
{
    std::lock_guard lock(m_mutex);
    return std::exchange(m_linksChanged, {});
}

std::map<std::string, double> NodeRegistry::takeOfferScales()
{
    std::lock_guard lock(m_mutex);
    return std::exchange(m_offersChanged, {});
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
                                : std::max<int64_t>(0, nowMs() - r->lastSeenMs);
        out.push_back({id, r->name, r->listenAddress, r->software, r->presence, r->reachability, r->reachabilityNote,
                       r->capacity, r->assumedBandwidth, a.state, a.version, a.cluster, a.stage, a.firstLayer,
                       a.lastLayer, r->report, ago, r->heartbeats});
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
