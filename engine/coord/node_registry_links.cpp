// SPDX-License-Identifier: GPL-3.0-or-later
// NodeRegistry's link events: registration (checks, certificate), heartbeats, Leave and
// closed links.
#include "engine/coord/node_registry.h"

#include <variant>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/wall_clock.h"
#include "engine/coord/invite_book.h"
#include "engine/coord/node_registry_record.h"
#include "engine/coord/wire_convert.h"
#include "engine/net/identity.h"

namespace rookery::coord {

using namespace registry_detail;

void NodeRegistry::opened(const std::shared_ptr<net::Link> &link)
{
    log::debug(kArea, "link " + link->describe() + " open; waiting for its registration");
    std::lock_guard lock(m_mutex);
    m_unregistered[link.get()] = {link, Clock::now()};
}

void NodeRegistry::message(const std::shared_ptr<net::Link> &link, net::Message &&message)
{
    Outbox out;
    {
        // It spoke: registered, refused or closed below, so the timeout for silent links
        // is done with it (a busy coordinator may take longer than that to register it).
        std::lock_guard lock(m_mutex);
        m_unregistered.erase(link.get());
    }
    if (auto *r = std::get_if<net::Register>(&message)) {
        onRegister(link, *r, out);
    } else if (auto *h = std::get_if<net::Heartbeat>(&message)) {
        onHeartbeat(link, *h, out);
    } else if (auto *l = std::get_if<net::Leave>(&message)) {
        std::unique_lock lock(m_mutex);
        if (!m_linkNode.count(link.get())) { // else it would keep an unregistered link open
            refuse(link, net::CoordinatorErrorCode::NotRegistered, "Leave before Register", out);
        } else {
            lock.unlock();
            onLeave(link, *l);
        }
    } else if (auto *rr = std::get_if<net::RelayRequest>(&message)) {
        onRelayRequest(link, *rr, out);
    } else if (auto *dr = std::get_if<net::DataRequest>(&message)) {
        std::unique_lock lock(m_mutex);
        if (!m_linkNode.count(link.get())) {
            refuse(link, net::CoordinatorErrorCode::NotRegistered, "data is for registered nodes: send Register first",
                   out);
        } else {
            lock.unlock();
            net::DataPiece piece{dr->sha256, dr->offset, 0, {}, "this coordinator serves no dataset"};
            if (m_hooks.data)
                piece = m_hooks.data(*dr);
            out.send(link, net::Message(std::move(piece)));
        }
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
    // A flood from one address is counted (metrics), not written line by line.
    if (code == net::CoordinatorErrorCode::Limited)
        log::debug(kArea, "refused " + link->describe() + ": " + reason);
    else
        log::warning(kArea, "refused " + link->describe() + ": " + reason);
    m_linkNode.erase(link.get());
    m_unregistered.erase(link.get());
    out.send(link, net::Message(net::CoordinatorError{code, reason}));
    out.close(link, reason);
}

void NodeRegistry::onRegister(const std::shared_ptr<net::Link> &link, const net::Register &r, Outbox &out)
{
    const int64_t wallMs = nowMs();
    const std::string nodeId = link->peer().nodeId;
    const std::string host = hostOfRemote(link->peer().address);
    bool known = false;
    {
        std::lock_guard lock(m_mutex);
        if (m_linkNode.count(link.get()))
            return refuse(link, net::CoordinatorErrorCode::BadRequest,
                          "this connection has registered already: one Register per connection", out);
        // Cheapest first: an address over its rate costs no signature check or database.
        if (auto why = m_limits.admitRegistration(host, Clock::now())) {
            ++m_counters.refusedLimited;
            return refuse(link, net::CoordinatorErrorCode::Limited, *why, out);
        }
        const auto it = m_nodes.find(nodeId);
        known = it != m_nodes.end();
        if (known && it->second->presence == Presence::Quarantined) {
            ++m_counters.refusedBanned;
            return refuse(link, net::CoordinatorErrorCode::Banned,
                          "this node is quarantined for the run: " + it->second->assignment.reason, out);
        }
        if (!known && m_bannedHosts.count(host)) {
            ++m_counters.refusedBanned;
            return refuse(link, net::CoordinatorErrorCode::Banned,
                          "a node from " + host + " was quarantined: no new nodes from that address for the run", out);
        }
        // Before the invite is redeemed: a node told to wait must not spend a use.
        if (auto why = m_limits.roomForNode(host)) {
            // A node reconnecting replaces its own link, which is counted until it closes.
            const auto old = known ? it->second->link.lock() : nullptr;
            const auto oldHost = old ? m_linkHost.find(old.get()) : m_linkHost.end();
            if (oldHost == m_linkHost.end() || oldHost->second != host) {
                ++m_counters.refusedLimited;
                return refuse(link, net::CoordinatorErrorCode::Limited, *why, out);
            }
        }
    }
    CheckedRegistration c;
    std::string certificate;
    try {
        c = checkRegistration(r, link->peer().address, wallMs);
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
        if (!m_replay.admit(r.nonce, wallMs))
            throw Refusal{net::CoordinatorErrorCode::Replay,
                          "the registration nonce was seen before: a replayed registration"};
        if (m_store)
            m_store->saveNonce(r.nonce, nodeId, wallMs);
        // A key registered before is a member already; only a new one needs an invite.
        if (m_config.invites && !known) {
            if (auto why = m_config.invites->redeem(r.invite, wallMs)) {
                std::lock_guard lock(m_mutex);
                ++m_counters.refusedNotInvited;
                return refuse(link, net::CoordinatorErrorCode::NotInvited, *why, out);
            }
            log::info(kArea, "node " + shortId(nodeId) + " joins with an invite");
        }
        certificate = m_ca.issue(r.publicKeyPem, m_config.certificateValidity);
    } catch (const Refusal &f) {
        std::lock_guard lock(m_mutex);
        return refuse(link, f.code, f.reason, out);
    }
    std::lock_guard lock(m_mutex);
    if (!m_linkHost.count(link.get())) {
        m_linkHost[link.get()] = host;
        m_limits.nodeLinked(host); // checked above; two at once may take it one over
    }
    auto &slot = m_nodes[nodeId];
    const bool fresh = !slot;
    if (fresh) {
        slot = std::make_unique<Record>();
        slot->nodeId = nodeId;
        slot->firstSeenMs = wallMs;
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
    rec.relayPort = r.relayPort;
    rec.assumedBandwidth = c.assumedBandwidth;
    rec.link = link;
    rec.lastSeen = Clock::now();
    rec.lastSeenMs = wallMs;
    const Presence was = rec.presence;
    const bool wasAway = rec.away();
    rec.presence = Presence::Online;
    rec.lostWithCoordinator = false;
    if (wasAway && !rec.away() && m_hooks.awayChanged)
        m_hooks.awayChanged();
    if (m_hooks.probe) { // every registration: the node's network may have changed since
        if (fresh || moved || rec.reachability == Reachability::Unknown) {
            rec.reachability = Reachability::Checking; // else the last verdict stands meanwhile
            rec.reachabilityNote.clear();
        }
    }
    if (!rec.inPlanner) {
        rec.capacity = c.capacity; // a node keeps the capacity it was placed with
        rec.parked = false;
        // A newcomer is placed with its verdict: placed before it, it would be re-placed
        // (next to neighbours that can dial it) and its neighbours re-told who dials whom
        // when the verdict comes, two pushes or more for nothing.
        rec.awaitingVerdict = rec.reachability == Reachability::Checking;
        if (rec.awaitingVerdict) {
            rec.verdictDue = rec.lastSeen + m_config.verdictWait;
            if (rec.assignment.state == AssignmentState::Waiting)
                rec.assignment.reason = kCheckingReachability;
        } else {
            rec.inPlanner = true;
            m_hooks.join(nodeId, rec.capacity);
        }
    } else if (moved) {
        m_hooks.addressesChanged();
    }
    if (m_hooks.probe)
        m_hooks.probe(nodeId, rec.listenAddress);
    m_hooks.changed();
    ++m_counters.registrations;
    log::info(kArea, std::string(fresh ? "registered" : "re-registered") + " node " + shortId(nodeId) + " '" +
                         rec.name + "' at " + rec.listenAddress +
                         (fresh ? "" : " (was " + std::string(presenceName(was)) + ")"));
    rec.toldInterval = rec.allowedInterval = m_pace;
    rec.report.links.clear();         // its next figures reach the planner, which may have dropped it meanwhile
    rec.report.computeOfferScale = 0; // the registration has its caps of now; what changes later counts
    out.send(link, net::Message(net::RegisterReply{nodeId, certificate, m_ca.certificatePem(), m_config.run,
                                                   toWire(rec.assignment), uint32_t(m_pace.count())}));
    if (!m_banned.nodeIds.empty())
        out.send(link, banListMessage());
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
    rec.lastSeenMs = nowMs();
    const bool wasAway = rec.away();
    const NodeReport before = rec.report;
    rec.report = fromWire(h.metrics);
    rec.reportFresh = true;
    noteActivity(rec, before, wasAway, now);
    if (!rec.report.complaints.empty())
        weighComplaints(rec, out);
    if (rec.report.links != before.links) {
        // At most a neighbourhood's worth: a node links to a handful of peers.
        auto &rates = m_linksChanged[rec.nodeId];
        rates.clear();
        for (const auto &[peer, link] : rec.report.links)
            if (link.uploadBytesPerSecond > 0 && rates.size() < kMaxLinkFigures && peer != rec.nodeId)
                rates[peer] = link.uploadBytesPerSecond;
    }
    if (rec.report.computeOfferScale > 0 && rec.report.computeOfferScale != before.computeOfferScale)
        m_offersChanged[rec.nodeId] = rec.report.computeOfferScale;
    ++rec.heartbeats;
    ++m_counters.heartbeats;
    rec.allowedInterval = std::max(rec.toldInterval, m_pace);
    rec.toldInterval = m_pace;
    out.send(link, net::Message(net::HeartbeatAck{h.seq, rec.assignment.version, uint32_t(m_pace.count())}));
    // The node missed an update (or it crossed this heartbeat): send it again, at most
    // once per interval.
    if (h.assignmentVersion < rec.assignment.version && now - rec.lastPush > m_config.heartbeatInterval) {
        rec.lastPush = now;
        out.send(link, std::make_shared<const Assignment>(rec.assignment));
    }
}

void NodeRegistry::noteActivity(Record &rec, const NodeReport &before, bool wasAway, Clock::time_point now)
{
    const std::string who = "node " + shortId(rec.nodeId) + " '" + rec.name + "'";
    if (rec.report.sleptSeconds > before.sleptSeconds && before.activity != NodeActivity::Unknown)
        log::info(kArea, who + "'s computer was asleep for " +
                             std::to_string(rec.report.sleptSeconds - before.sleptSeconds) + " s");
    if (rec.paused()) {
        if (!rec.pausedSince) {
            rec.pausedSince = now;
            log::info(kArea, who + " paused (" + std::string(awayReasonName(rec.report.away)) + ")" +
                                 (rec.away() ? "; its cluster's rings skip it meanwhile" : ""));
        }
    } else if (rec.pausedSince) {
        rec.pausedSince.reset();
        log::info(kArea, who + " resumed");
        if (rec.parked) { // re-planned away while it was paused: place it again
            rec.parked = false;
            rec.inPlanner = true;
            m_hooks.join(rec.nodeId, rec.capacity);
        }
    }
    if (rec.away() != wasAway && m_hooks.awayChanged)
        m_hooks.awayChanged();
    if (rec.report.activity != before.activity || rec.report.away != before.away)
        m_hooks.changed();
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
    m_unregistered.erase(link.get());
    if (const auto host = m_linkHost.find(link.get()); host != m_linkHost.end()) {
        m_limits.nodeUnlinked(host->second);
        m_linkHost.erase(host);
    }
    const auto it = m_linkNode.find(link.get());
    if (it == m_linkNode.end())
        return;
    Record &rec = *m_nodes.at(it->second);
    m_linkNode.erase(it);
    if (rec.presence == Presence::Online)
        lose(rec, Clock::now(), "its link closed");
}

} // namespace rookery::coord
