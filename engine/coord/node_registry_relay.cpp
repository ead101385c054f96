// SPDX-License-Identifier: GPL-3.0-or-later
// NodeRegistry's relays: a node that cannot dial a neighbour (nor be dialled) asks for a
// relayed link; the pair gets tickets for a volunteer's relay (one that opted in and can
// be dialled) or, failing that, the coordinator's own.
#include "engine/coord/node_registry.h"

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/coord/node_registry_record.h"
#include "engine/net/host_port.h"
#include "engine/relay/relay_protocol.h"

namespace rookery::coord {

using namespace registry_detail;

std::optional<NodeRegistry::VolunteerRelay> NodeRegistry::volunteerRelay(const std::string &a, const std::string &b)
{
    Record *best = nullptr;
    std::shared_ptr<net::Link> bestLink;
    for (auto &[id, r] : m_nodes) {
        if (r->relayPort == 0 || id == a || id == b || r->presence != Presence::Online ||
            r->reachability != Reachability::Direct || (best && r->relayPairsGiven >= best->relayPairsGiven))
            continue;
        if (auto l = r->link.lock()) {
            best = r.get();
            bestLink = std::move(l);
        }
    }
    if (!best)
        return std::nullopt;
    std::string host;
    try {
        host = net::splitHostPort(best->listenAddress).first;
    } catch (const Error &) {
        return std::nullopt;
    }
    ++best->relayPairsGiven;
    return VolunteerRelay{best->nodeId, net::bracketed(host) + ":" + std::to_string(best->relayPort),
                          std::move(bestLink)};
}

void NodeRegistry::onRelayRequest(const std::shared_ptr<net::Link> &link, const net::RelayRequest &r, Outbox &out)
{
    std::string from;
    std::shared_ptr<net::Link> peerLink;
    std::optional<VolunteerRelay> volunteer;
    net::RelayGrant mine{r.peerId, {}, {}, false, {}};
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_linkNode.find(link.get());
        if (it == m_linkNode.end())
            return refuse(link, net::CoordinatorErrorCode::NotRegistered,
                          "a relay is for registered nodes: send Register first", out);
        from = it->second;
        const auto p = m_nodes.find(r.peerId);
        const Record *peer = p == m_nodes.end() ? nullptr : p->second.get();
        if (!peer)
            mine.reason = "node " + shortId(r.peerId) + " is not registered here";
        // Relays to its own neighbours only: nobody spends the relay (and the peer's cap)
        // on strangers.
        else if (!m_nodes.at(from)->assignment.namesPeer(r.peerId))
            mine.reason = "node " + shortId(r.peerId) + " is not a neighbour in this node's assignment";
        else if (peer->presence != Presence::Online || !(peerLink = peer->link.lock()))
            mine.reason = "node " + shortId(r.peerId) + " is not online";
        if (mine.reason.empty())
            volunteer = volunteerRelay(from, r.peerId);
    }
    if (mine.reason.empty() && !volunteer && !m_hooks.relay)
        mine.reason = "this coordinator runs no relay, and no volunteer's relay is available";
    if (!mine.reason.empty()) {
        out.send(link, net::Message(std::move(mine)));
        return;
    }
    net::RelayGrant theirs{from, {}, {}, true, {}};
    try {
        if (volunteer) { // its relay learns the tokens first, over its own coordinator link
            const std::string a = relay::tokenToBytes(relay::randomToken());
            std::string b;
            do
                b = relay::tokenToBytes(relay::randomToken());
            while (b == a);
            out.send(volunteer->link, net::Message(net::RelayExpect{from, r.peerId, a, b}));
            mine.address = theirs.address = volunteer->address;
            mine.token = a;
            theirs.token = b;
        } else {
            const RelayTickets t = m_hooks.relay(from, r.peerId);
            mine.address = theirs.address = t.address;
            mine.token = t.dialerToken;
            theirs.token = t.acceptorToken;
        }
    } catch (const Error &e) {
        mine.reason = e.what();
        out.send(link, net::Message(std::move(mine)));
        return;
    }
    {
        std::lock_guard lock(m_mutex);
        ++m_counters.relayGrants;
    }
    log::info(kArea, "relaying " + shortId(from) + " -> " + shortId(r.peerId) + " through " + mine.address +
                         (volunteer ? " (volunteer " + shortId(volunteer->nodeId) + ")" : ""));
    out.send(link, net::Message(std::move(mine)));
    out.send(peerLink, net::Message(std::move(theirs)));
}

} // namespace rookery::coord
