// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/participant: the PeerMesh's shared state, used by peer_mesh.cpp
// (listening, dialling, events) and peer_mesh_relay.cpp (links through a relay).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "engine/common/log.h"
#include "engine/net/listener.h"
#include "engine/net/upload_probe.h"
#include "engine/participant/peer_mesh.h"

namespace rookery::participant {

struct PeerMesh::State : std::enable_shared_from_this<PeerMesh::State>
{
    Config config;
    Events events;
    net::NetContext &context;
    std::unique_ptr<net::Listener> listener;

    mutable std::mutex mutex;
    std::set<std::string> wanted;       // peers of the current assignment
    std::set<std::string> banned;       // the coordinator's ban list
    std::vector<PeerAddress> lastPeers; // as setPeers() last had them, banned or not
    bool lastSelfUnreachable = false;
    std::map<std::string, std::shared_ptr<net::Link>> dialled; // peers we dial (kept while wanted)
    std::map<std::string, std::chrono::steady_clock::time_point> dialledSince;
    std::map<std::string, std::shared_ptr<net::Link>> open; // the open link per peer
    std::map<std::string, std::string> dialAddress;         // where we dial each peer
    std::map<std::string, std::string> dialError;           // why the last dial of a peer failed
    // For "cannot reach any neighbour": when a link last opened or the neighbours changed,
    // and when that was last said.
    std::chrono::steady_clock::time_point lastLinkOrChange = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point isolatedSaid{};
    // Peers linked through a relay: neither end can be dialled (peer_mesh_relay.cpp).
    struct Relay
    {
        bool asks = false;     // this node asks for the grants (the smaller id); the peer waits
        bool fallback = false; // asked for after direct dials failed, though the peer seemed dialable
        std::shared_ptr<net::Link> link;
        std::chrono::steady_clock::time_point linkSince; // a link not open 20 s after this is dead
        std::chrono::steady_clock::time_point nextAsk;
        std::chrono::milliseconds backoff{1000};
    };
    std::map<std::string, Relay> relays;
    net::LinkStats closedTotals;
    std::condition_variable allClosed;
    // Held while an event runs; the destructor takes it to detach, so that no event
    // reaches the owner once ~PeerMesh has returned. (So an owner must not destroy the
    // mesh while holding a lock its event handlers take.)
    std::mutex eventsMutex;
    bool detached = false;
    // Timing each link's upload as it opens (peer_mesh_probe.cpp). Under probeMutex,
    // which is never held while taking `mutex` or `eventsMutex`.
    struct LinkProbe
    {
        std::unique_ptr<net::UploadProbe> probe;
        std::shared_ptr<net::Link> link;
        std::chrono::steady_clock::time_point deadline;
    };
    mutable std::mutex probeMutex;
    std::map<std::string, LinkProbe> probes;
    std::map<std::string, net::LinkFigure> figures; // the last figure per peer
    uint64_t probesStarted = 0;

    void startProbe(const std::string &peer, const std::shared_ptr<net::Link> &link);
    // A Pong on `link`: true when it was a probe's.
    bool probePong(const std::string &peer, const std::shared_ptr<net::Link> &link, uint64_t nonce);
    // Probes past their time end with what they have; those of closed links are dropped.
    void expireProbes(std::chrono::steady_clock::time_point now);
    void dropProbe(const std::shared_ptr<net::Link> &link);
    void keepFigure(const std::string &peer, const net::UploadProbe &probe); // under probeMutex

    explicit State(net::NetContext &c)
        : context(c)
    { }

    // Tells the owner something it should say as a warning (Events::problem).
    void problem(const std::string &peer, const std::string &text)
    {
        std::lock_guard lock(eventsMutex);
        if (!detached && events.problem)
            events.problem(peer, text);
        else if (!detached)
            log::warning("mesh", text);
    }

    void addStats(const net::LinkStats &s)
    {
        closedTotals.bytesSent += s.bytesSent;
        closedTotals.bytesReceived += s.bytesReceived;
        closedTotals.messagesSent += s.messagesSent;
        closedTotals.messagesReceived += s.messagesReceived;
    }

    // The events every link gets: linkEvents(), behind the WAN emulation when a test
    // switched it on.
    net::LinkEvents wireEvents() { return net::emulateWan(context, config.wan, linkEvents()); }

    net::LinkEvents linkEvents()
    {
        std::weak_ptr<State> weak = weak_from_this();
        net::LinkEvents e;
        e.opened = [weak](const std::shared_ptr<net::Link> &link) {
            if (auto self = weak.lock())
                self->onOpened(link);
        };
        e.message = [weak](const std::shared_ptr<net::Link> &link, net::Message &&message) {
            auto self = weak.lock();
            if (!self)
                return;
            if (const auto *pong = std::get_if<net::Pong>(&message)) { // ours: peers answer pings themselves
                self->probePong(link->peer().nodeId, link, pong->nonce);
                return;
            }
            std::lock_guard events(self->eventsMutex);
            if (!self->detached && self->events.message)
                self->events.message(link->peer().nodeId, std::move(message));
        };
        e.writable = [weak](const std::shared_ptr<net::Link> &link) {
            auto self = weak.lock();
            if (!self)
                return;
            std::lock_guard events(self->eventsMutex);
            if (!self->detached && self->events.writable)
                self->events.writable(link->peer().nodeId);
        };
        e.closed = [weak](const std::shared_ptr<net::Link> &link, const net::CloseInfo &info) {
            if (auto self = weak.lock())
                self->onClosed(link, info);
        };
        return e;
    }

    void onOpened(const std::shared_ptr<net::Link> &link)
    {
        const std::string peer = link->peer().nodeId;
        if (link->peer().role == net::NodeRole::Coordinator) { // it checks that peers can dial us
            log::info("mesh", "the coordinator reached this node at its advertised address: peers can dial it");
            link->close("reachability check done");
            return;
        }
        {
            std::lock_guard lock(mutex);
            if (banned.count(peer)) {
                log::info("mesh", "closing a link from " + link->describe() + ": the coordinator banned it");
                link->close("banned by the coordinator");
                return;
            }
            if (!wanted.count(peer)) {
                log::info("mesh", "closing a link from " + link->describe() + ": not a neighbour in our assignment");
                link->close("not a neighbour in this assignment");
                return;
            }
            auto &slot = open[peer];
            if (slot && slot != link)
                slot->close("replaced by a newer link");
            slot = link;
            lastLinkOrChange = std::chrono::steady_clock::now();
            dialError.erase(peer);
        }
        if (config.measureLinks)
            startProbe(peer, link);
        std::lock_guard lock(eventsMutex);
        if (!detached && events.link)
            events.link(peer, true);
    }

    void onClosed(const std::shared_ptr<net::Link> &link, const net::CloseInfo &info)
    {
        const std::string peer = link->peer().nodeId;
        bool wasOpen = false;
        {
            std::lock_guard lock(mutex);
            for (const auto &[dialledPeer, dialledLink] : dialled) // a dial that failed: remember why
                if (dialledLink == link && !info.clean)
                    dialError[dialledPeer] = info.reason;
            auto it = open.find(peer);
            if (it != open.end() && it->second == link) {
                open.erase(it);
                wasOpen = true;
                // A direct link that was up: the relay fallback counts from its loss, not
                // from the first dial (it took to the relay at once on any drop).
                if (const auto since = dialledSince.find(peer); since != dialledSince.end())
                    since->second = std::chrono::steady_clock::now();
                if (open.empty())
                    allClosed.notify_all();
            }
            addStats(link->stats());
        }
        dropProbe(link);
        if (wasOpen) {
            log::info("mesh", "link to " + link->describe() + " closed: " + info.reason);
            std::lock_guard lock(eventsMutex);
            if (!detached && events.link)
                events.link(peer, false);
        }
    }
};

} // namespace rookery::participant
