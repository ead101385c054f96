// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/coord: what NodeRegistry keeps per node and what it sends once its
// lock is released, shared by node_registry.cpp (state, publishing, views),
// node_registry_links.cpp (link events) and node_registry_timeouts.cpp (failure
// detection).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/coord/node_registry.h"

namespace rookery::coord::registry_detail {

inline constexpr const char *kArea = "coord";

inline std::string shortId(const std::string &id) { return id.substr(0, 12); }

inline std::string millis(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

// An assignment that places the node nowhere.
inline Assignment unplaced(uint64_t version, AssignmentState state, std::string reason)
{
    Assignment a;
    a.version = version;
    a.state = state;
    a.reason = std::move(reason);
    return a;
}

} // namespace rookery::coord::registry_detail

namespace rookery::coord {

struct NodeRegistry::Record
{
    std::string nodeId, name, listenAddress, profileJson, software, certificatePem;
    double uploadBytesPerSecond = 0;
    swarm::Capacity capacity;
    bool assumedBandwidth = false;
    Presence presence = Presence::Online;
    Reachability reachability = Reachability::Unknown;
    std::string reachabilityNote;
    std::weak_ptr<net::Link> link;
    Clock::time_point lastSeen, graceUntil, lastPush;
    /// The heartbeat interval it was told last, and the one its next heartbeat may take
    /// (the longer of that and the one told before: it may not have heard the change).
    std::chrono::milliseconds toldInterval{0}, allowedInterval{0};
    int64_t firstSeenMs = 0, lastSeenMs = 0;
    Assignment assignment;
    bool inPlanner = false;
    /// Paused since then (its heartbeats say so); re-planned away once that lasts longer
    /// than the grace, and placed again when it resumes (`parked`).
    std::optional<Clock::time_point> pausedSince;
    bool parked = false;
    /// Registered, not yet in the planner: placed once the reachability check's verdict
    /// is in (by verdictDue at the latest), so that its first placement already says who
    /// can dial whom and it is not moved or re-sent for it seconds later.
    bool awaitingVerdict = false;
    Clock::time_point verdictDue;
    /// Complaints about this node: reporter id -> values of it the reporter refused.
    std::map<std::string, int64_t> complaintsAgainst;
    /// It complained about a node its assignment takes no values from (logged once).
    bool complainedOfStrangers = false;
    /// Lost only because this coordinator restarted (restore()), until it registers again.
    bool lostWithCoordinator = false;
    NodeReport report;
    bool reportFresh = false;

    bool paused() const { return presence == Presence::Online && report.activity == NodeActivity::Paused; }
    /// Its cluster cannot train without it for now.
    bool away() const
    {
        return inPlanner && assignment.isTraining() &&
               ((presence == Presence::Lost && !lostWithCoordinator) || paused());
    }
    uint64_t heartbeats = 0;
    uint16_t relayPort = 0;       ///< it runs a relay for others there (Register.relay_port)
    uint64_t relayPairsGiven = 0; ///< pairs sent to its relay, to spread them
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
    void flush();
};

} // namespace rookery::coord
