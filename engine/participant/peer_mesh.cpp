// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/peer_mesh.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/net/dialer.h"
#include "engine/net/host_port.h"
#include "engine/net/listener.h"
#include "engine/participant/peer_mesh_state.h"

namespace rookery::participant {

PeerMesh::PeerMesh(net::NetContext &context, Config config, Events events)
    : m(std::make_shared<State>(context))
{
    m->config = std::move(config);
    m->config.link.nodeId = m->config.nodeId; // the Hello must name the certificate's node
    m->events = std::move(events);
    net::ListenerConfig lc;
    lc.bindAddress = m->config.bindAddress;
    lc.port = m->config.port;
    lc.credentials = m->config.credentials;
    lc.clients.kind = net::PeerCheck::Kind::SwarmCa;
    lc.link = m->config.link;
    lc.maxLinksPerAddress = m->config.maxLinksPerAddress;
    if (m->config.wan.enabled())
        log::warning("mesh", "WAN emulation (a testing option) on every peer link: " + m->config.wan.describe());
    m->listener = std::make_unique<net::Listener>(context, lc, m->wireEvents());
}

PeerMesh::~PeerMesh()
{
    m->listener->stop();
    std::map<std::string, std::shared_ptr<net::Link>> dialled;
    {
        std::lock_guard lock(m->mutex);
        dialled.swap(m->dialled);
        for (auto &[peer, r] : m->relays)
            if (r.link)
                dialled.emplace(peer + "/relayed", std::move(r.link));
        m->relays.clear();
        m->wanted.clear();
    }
    for (auto &[peer, link] : dialled)
        link->close("node shutting down");
    // Let the goodbyes go out, so peers see a clean close rather than a cut connection.
    {
        std::unique_lock lock(m->mutex);
        m->allClosed.wait_for(lock, std::chrono::seconds(1), [&] { return m->open.empty(); });
    }
    std::lock_guard events(m->eventsMutex); // waits for an event that is running
    m->detached = true;
}

uint16_t PeerMesh::port() const { return m->listener->port(); }

const std::string &PeerMesh::nodeId() const { return m->config.nodeId; }

bool dialsPeer(const std::string &selfId, bool selfUnreachable, const PeerAddress &peer)
{
    return !peer.unreachable && (selfUnreachable || selfId < peer.nodeId);
}

void PeerMesh::setCredentials(const net::TlsCredentials &credentials)
{
    m->listener->setCredentials(credentials); // throws before anything changed when unusable
    std::vector<std::shared_ptr<net::Link>> retrying;
    std::vector<PeerAddress> keep;
    bool selfUnreachable = false;
    {
        std::lock_guard lock(m->mutex);
        m->config.credentials = credentials;
        for (auto it = m->dialled.begin(); it != m->dialled.end();) {
            const auto open = m->open.find(it->first);
            if (open != m->open.end() && open->second == it->second) {
                ++it;
                continue;
            }
            retrying.push_back(it->second); // still dialling with the old certificate
            m->dialledSince.erase(it->first);
            it = m->dialled.erase(it);
        }
        keep = m->lastPeers;
        selfUnreachable = m->lastSelfUnreachable;
    }
    log::info("mesh", "renewed this node's certificate; " + std::to_string(retrying.size()) +
                          " link(s) still connecting start again with it");
    for (auto &link : retrying)
        link->close("renewing the certificate");
    try {
        setPeers(keep, selfUnreachable); // dials those again
    } catch (const Error &e) {
        log::warning("mesh", std::string("after renewing the certificate: ") + e.what());
    }
}

void PeerMesh::setBanned(std::set<std::string> nodeIds)
{
    std::vector<PeerAddress> keep;
    bool selfUnreachable = false;
    {
        std::lock_guard lock(m->mutex);
        if (nodeIds == m->banned)
            return;
        m->banned = std::move(nodeIds);
        keep = m->lastPeers;
        selfUnreachable = m->lastSelfUnreachable;
        log::info("mesh", "the coordinator's ban list has " + std::to_string(m->banned.size()) +
                              " node(s); their links are refused");
    }
    try {
        setPeers(keep, selfUnreachable); // drops the banned from the wanted, and closes their links
    } catch (const Error &e) {           // an address it refused before; the next assignment mends it
        log::warning("mesh", std::string("after the ban list: ") + e.what());
    }
    std::vector<std::shared_ptr<net::Link>> toClose;
    {
        std::lock_guard lock(m->mutex);
        for (const auto &[peer, link] : m->open)
            if (m->banned.count(peer))
                toClose.push_back(link);
    }
    for (auto &link : toClose)
        link->close("banned by the coordinator");
}

void PeerMesh::setPeers(const std::vector<PeerAddress> &given, bool selfUnreachable)
{
    std::vector<PeerAddress> peers;
    {
        std::lock_guard lock(m->mutex);
        m->lastPeers = given;
        m->lastSelfUnreachable = selfUnreachable;
        for (const auto &p : given)
            if (!m->banned.count(p.nodeId))
                peers.push_back(p);
    }
    std::vector<std::pair<PeerAddress, std::pair<std::string, uint16_t>>> toDial;
    std::set<std::string> dialNow;
    for (const auto &p : peers) {
        if (dialsPeer(m->config.nodeId, selfUnreachable, p)) {
            toDial.push_back({p, net::splitHostPort(p.address)}); // validate before changing anything
            dialNow.insert(p.nodeId);
        }
    }
    std::vector<std::shared_ptr<net::Link>> toClose;
    {
        std::lock_guard lock(m->mutex);
        m->wanted.clear();
        for (const auto &p : peers)
            m->wanted.insert(p.nodeId);
        m->lastLinkOrChange = std::chrono::steady_clock::now();
        for (auto it = m->dialled.begin(); it != m->dialled.end();) {
            if (!m->wanted.count(it->first) || !dialNow.count(it->first)) { // gone, or it dials us now
                toClose.push_back(it->second);
                m->dialledSince.erase(it->first);
                m->dialAddress.erase(it->first);
                m->dialError.erase(it->first);
                it = m->dialled.erase(it);
            } else {
                ++it;
            }
        }
        for (auto &[peer, link] : m->open)
            if (!m->wanted.count(peer))
                toClose.push_back(link);
    }
    for (auto &link : toClose)
        link->close("no longer a neighbour");
    // After the dials of peers no longer wanted are forgotten: its tick() must not take
    // one of them, dialled in vain for a while, for a peer to reach through the relay
    // (the coordinator refuses a relay to a peer that is not a neighbour, and the ask
    // would repeat until the next assignment).
    setRelays(peers, selfUnreachable);
    for (auto &[peer, hostPort] : toDial) {
        {
            std::lock_guard lock(m->mutex);
            if (m->dialled.count(peer.nodeId))
                continue;
        }
        net::DialConfig dc;
        dc.host = hostPort.first;
        dc.port = hostPort.second;
        {
            std::lock_guard lock(m->mutex);
            dc.credentials = m->config.credentials;
        }
        dc.server.kind = net::PeerCheck::Kind::SwarmCa;
        dc.server.expectedNodeId = peer.nodeId;
        dc.link = m->config.link;
        dc.initialBackoff = std::chrono::milliseconds(100);
        dc.maxBackoff = std::chrono::milliseconds(2000);
        auto link = net::dial(m->context, dc, m->wireEvents());
        std::lock_guard lock(m->mutex);
        m->dialled[peer.nodeId] = link;
        m->dialledSince[peer.nodeId] = std::chrono::steady_clock::now();
        m->dialAddress[peer.nodeId] = peer.address;
    }
}

net::SendResult PeerMesh::send(const std::string &peer, const net::Message &message)
{
    std::shared_ptr<net::Link> link;
    {
        std::lock_guard lock(m->mutex);
        auto it = m->open.find(peer);
        if (it == m->open.end())
            return net::SendResult::NotOpen;
        link = it->second;
    }
    return link->send(message);
}

bool PeerMesh::isUp(const std::string &peer) const
{
    std::lock_guard lock(m->mutex);
    auto it = m->open.find(peer);
    return it != m->open.end() && it->second->isOpen();
}

net::LinkStats PeerMesh::totals() const
{
    std::lock_guard lock(m->mutex);
    net::LinkStats total = m->closedTotals;
    for (const auto &[peer, link] : m->open) {
        const auto s = link->stats();
        total.bytesSent += s.bytesSent;
        total.bytesReceived += s.bytesReceived;
        total.messagesSent += s.messagesSent;
        total.messagesReceived += s.messagesReceived;
    }
    return total;
}

} // namespace rookery::participant
