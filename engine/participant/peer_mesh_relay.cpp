// SPDX-License-Identifier: GPL-3.0-or-later
// The PeerMesh's links through a relay: for two peers of which neither can be dialled,
// the one with the smaller node id asks the coordinator; both get a grant (a relay
// address and a token each) and link through the relay, the asker as TLS client. The
// relay splices the two streams and sees only TLS records.
#include <utility>
#include <vector>

#include "engine/common/error.h"
#include "engine/net/dialer.h"
#include "engine/net/host_port.h"
#include "engine/participant/peer_mesh_state.h"

namespace rookery::participant {

using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds kMaxBackoff{30'000};
constexpr std::chrono::seconds kIsolatedRepeat{60}; // "cannot reach any neighbour", at most this often

std::string shortId(const std::string &id) { return id.substr(0, 12); }

} // namespace

void PeerMesh::setRelays(const std::vector<PeerAddress> &peers, bool selfUnreachable)
{
    std::vector<std::shared_ptr<net::Link>> toClose;
    {
        std::lock_guard lock(m->mutex);
        std::map<std::string, State::Relay> next;
        for (const auto &p : peers) {
            auto it = m->relays.find(p.nodeId);
            const bool dialable = !selfUnreachable || !p.unreachable;
            if (dialable && (it == m->relays.end() || !it->second.fallback)) {
                if (it != m->relays.end()) // one side became reachable: upgrade to a direct link
                    log::info("mesh", "peer " + shortId(p.nodeId) +
                                          " can now be dialled directly: leaving the relay for a direct link");
                continue; // dialled directly (a relay it fell back to stays below)
            }
            if (it != m->relays.end()) {
                next.emplace(p.nodeId, std::move(it->second));
                m->relays.erase(it);
                continue;
            }
            State::Relay r;
            r.asks = m->config.nodeId < p.nodeId;
            r.nextAsk = Clock::now();
            next.emplace(p.nodeId, std::move(r));
            log::info("mesh", "neither this node nor peer " + shortId(p.nodeId) +
                                  " can be dialled: linking through the coordinator's relay");
        }
        for (auto &[peer, r] : m->relays) // no longer relayed
            if (r.link)
                toClose.push_back(std::move(r.link));
        m->relays = std::move(next);
    }
    for (auto &link : toClose)
        link->close("no longer a relayed neighbour");
    tick();
}

void PeerMesh::tick()
{
    m->expireProbes(Clock::now());
    std::vector<std::string> ask;
    std::vector<std::pair<std::string, std::string>> problems; // said once the lock is let go
    {
        std::lock_guard lock(m->mutex);
        const auto now = Clock::now();
        // A peer dialled in vain for a while: its address may be right and still out of
        // reach from here (behind the same router, without hairpin NAT). Try the relay.
        for (const auto &[peer, since] : m->dialledSince) {
            const auto open = m->open.find(peer);
            if (now - since < m->config.relayFallbackAfter || m->relays.count(peer) || !m->wanted.count(peer) ||
                (open != m->open.end() && open->second->isOpen()))
                continue;
            State::Relay r;
            r.asks = true;
            r.fallback = true;
            r.nextAsk = now;
            m->relays.emplace(peer, std::move(r));
            const auto error = m->dialError.find(peer);
            problems.emplace_back(peer,
                                  "cannot reach " + shortId(peer) + " at " + m->dialAddress[peer] + " directly (" +
                                      (error == m->dialError.end()
                                           ? std::string("no link after ") +
                                                 std::to_string(m->config.relayFallbackAfter.count() / 1000) + " s"
                                           : error->second) +
                                      "); using the relay");
        }
        // Not one neighbour reachable for a while: say so (once a minute), and go on trying.
        if (!m->wanted.empty() && m->open.empty() && now - m->lastLinkOrChange > m->config.isolatedWarningAfter &&
            now - m->isolatedSaid > kIsolatedRepeat) {
            m->isolatedSaid = now;
            std::string last;
            for (const auto &[peer, error] : m->dialError)
                last = " (" + shortId(peer) + ": " + error + ")";
            problems.emplace_back(std::string(), "cannot reach any of its " + std::to_string(m->wanted.size()) +
                                                     (m->wanted.size() == 1 ? " neighbour" : " neighbours") + last +
                                                     "; still trying");
        }
        for (auto &[peer, r] : m->relays) {
            const auto open = m->open.find(peer);
            if (!r.link && open != m->open.end() && open->second->isOpen())
                continue; // linked directly after all
            // The relay waits at most 15 s for the pair, the handshake at most 10 s.
            if (r.link && !r.link->isOpen() && now - r.linkSince > std::chrono::seconds(20))
                r.link.reset();
            if (!r.asks || r.link || now < r.nextAsk)
                continue;
            ask.push_back(peer);
            r.nextAsk = now + r.backoff;
            r.backoff = std::min(kMaxBackoff, r.backoff * 2);
        }
    }
    for (const auto &[peer, text] : problems)
        m->problem(peer, text);
    std::lock_guard events(m->eventsMutex);
    if (m->detached || !m->events.needRelay)
        return;
    for (const auto &peer : ask)
        m->events.needRelay(peer);
}

void PeerMesh::relayGranted(const net::RelayGrant &grant)
{
    if (grant.token.empty()) {
        m->problem(grant.peerId, "the coordinator gave no relay to " + shortId(grant.peerId) + ": " + grant.reason +
                                     "; asking again later");
        return;
    }
    net::RelayedDialConfig rc;
    try {
        std::tie(rc.host, rc.port) = net::splitHostPort(grant.address);
    } catch (const Error &e) {
        log::warning("mesh", std::string("a relay grant with a bad address: ") + e.what());
        return;
    }
    rc.token = grant.token;
    rc.accept = grant.accept;
    {
        std::lock_guard lock(m->mutex);
        rc.credentials = m->config.credentials;
    }
    rc.peer.kind = net::PeerCheck::Kind::SwarmCa;
    rc.peer.expectedNodeId = grant.peerId; // the relay cannot stand in for the peer
    rc.link = m->config.link;
    // Its events are every link's, and a relayed link that ends makes room to ask again.
    net::LinkEvents events = m->wireEvents();
    std::weak_ptr<State> weak = m;
    events.opened = [weak, user = events.opened, peer = grant.peerId](const std::shared_ptr<net::Link> &link) {
        if (auto self = weak.lock()) {
            std::lock_guard lock(self->mutex);
            if (auto it = self->relays.find(peer); it != self->relays.end())
                it->second.backoff = std::chrono::milliseconds(1000);
        }
        if (user)
            user(link);
    };
    events.closed = [weak, user = events.closed, peer = grant.peerId](const std::shared_ptr<net::Link> &link,
                                                                      const net::CloseInfo &info) {
        if (auto self = weak.lock()) {
            std::lock_guard lock(self->mutex);
            if (auto it = self->relays.find(peer); it != self->relays.end() && it->second.link == link) {
                it->second.link.reset();
                log::info("mesh", "relayed link to " + shortId(peer) + " ended: " + info.reason);
            }
        }
        if (user)
            user(link, info);
    };
    std::shared_ptr<net::Link> replaced;
    {
        std::lock_guard lock(m->mutex);
        auto it = m->relays.find(grant.peerId);
        if (it == m->relays.end()) {
            if (!m->wanted.count(grant.peerId)) {
                log::info("mesh", "ignoring a relay grant for " + shortId(grant.peerId) + ": not a neighbour");
                return;
            }
            // A neighbour that cannot reach this node directly asked for the relay.
            it = m->relays.emplace(grant.peerId, State::Relay{}).first;
        }
        replaced = std::move(it->second.link);
    }
    if (replaced)
        replaced->close("replaced by a newer relayed link");
    auto link = net::dialRelayed(m->context, std::move(rc), std::move(events));
    {
        std::lock_guard lock(m->mutex);
        if (auto it = m->relays.find(grant.peerId); it != m->relays.end()) {
            it->second.link = link;
            it->second.linkSince = Clock::now();
            return;
        }
    }
    link->close("no longer a relayed neighbour");
}

} // namespace rookery::participant
