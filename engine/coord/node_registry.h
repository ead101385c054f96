// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/coord/address_limits.h"
#include "engine/coord/assignment.h"
#include "engine/coord/coordinator_store.h"
#include "engine/coord/registration_check.h"
#include "engine/net/certificate_authority.h"
#include "engine/net/link.h"

namespace rookery::coord {

/// Where a registered node stands with the coordinator.
enum class Presence {
    Online, ///< its link is up and it sends heartbeats
    Lost,   ///< its link dropped or went quiet: it keeps its assignment for the grace period
    Gone,   ///< lost for longer than the grace period: re-planned away
    Left,   ///< it said goodbye (Leave): re-planned away at once
    /// Its peers refused its values as poisoned: re-planned away and its key banned for
    /// the run (kept across restarts); new keys from its address are refused too.
    Quarantined,
};

std::string_view presenceName(Presence presence);
Presence presenceFromName(std::string_view name);

/// Whether peers can dial a node at its advertised address (ReachabilityProbe).
enum class Reachability {
    Unknown,     ///< not checked since it registered (or since the coordinator restarted)
    Checking,    ///< a check is under way
    Direct,      ///< the coordinator dialled it and completed the handshake
    Unreachable, ///< no handshake within the check's time (behind NAT, firewalled, wrong address)
};

std::string_view reachabilityName(Reachability reachability);

class InviteBook;

/// Timeouts and the run every node receives.
struct RegistryConfig
{
    std::chrono::milliseconds heartbeatInterval{1000};
    std::chrono::milliseconds heartbeatTimeout{5000};
    /// Heartbeats a second the coordinator budgets for, all nodes together: past
    /// heartbeatInterval x this many nodes, the interval grows (heartbeatPace). 0: fixed.
    double heartbeatBudget = 2000;
    std::chrono::milliseconds registerTimeout{10'000}; ///< an open link silent this long is closed
    /// With a reachability probe: a new node is placed once its verdict is in, or after
    /// this long without one.
    std::chrono::milliseconds verdictWait{22'000};
    std::chrono::milliseconds rejoinGrace{300'000}; ///< as CoordinatorSettings::rejoinGrace
    std::chrono::seconds certificateValidity{30 * 86400};
    std::string runId;
    net::RunInfo run;
    /// Invite-only: a key the coordinator does not know needs a join token from here.
    /// Null: open admission.
    InviteBook *invites = nullptr;
    AddressLimitSettings addressLimits;
    /// A node is quarantined when one peer has refused this many of its values, or two
    /// peers any (0: never).
    int64_t quarantineAfter = 3;
};

/// One node as the status API shows it (light: no ring lists).
struct NodeStatus
{
    std::string nodeId;
    std::string name;
    std::string address;
    std::string software;
    Presence presence = Presence::Online;
    Reachability reachability = Reachability::Unknown;
    std::string reachabilityNote; ///< why, in words, once checked
    swarm::Capacity capacity;
    bool assumedBandwidth = false;
    AssignmentState state = AssignmentState::Waiting;
    uint64_t assignmentVersion = 0;
    int cluster = -1;
    int stage = 0;
    size_t firstLayer = 0;
    size_t lastLayer = 0;
    NodeReport report;
    int64_t lastSeenMsAgo = 0;
    uint64_t heartbeats = 0;
};

struct RegistryCounters
{
    uint64_t registrations = 0;
    uint64_t refusals = 0;          ///< every refused registration or request, the two below included
    uint64_t refusedNotInvited = 0; ///< invite-only: no valid join token
    uint64_t refusedLimited = 0;    ///< an address over its registration rate or node count
    uint64_t refusedBanned = 0;     ///< a quarantined key, or a new key from its address
    uint64_t quarantined = 0;       ///< nodes quarantined since start
    uint64_t heartbeats = 0;
    uint64_t assignmentPushes = 0;
    uint64_t relayGrants = 0;
};

/// A relayed pair the coordinator's relay expects (RelayServer::expectPair).
struct RelayTickets
{
    std::string address;       ///< "host:port" of the relay
    std::string dialerToken;   ///< for the node that asked (TLS client)
    std::string acceptorToken; ///< for its peer (TLS server)
};

/// What the registry tells the planner. Called under the registry's lock, so they must
/// only queue work.
struct RegistryHooks
{
    std::function<void(const std::string &nodeId, const swarm::Capacity &capacity)> join;
    std::function<void(const std::string &nodeId)> leave;
    std::function<void()> addressesChanged;
    /// A placed node went away (lost, paused) or came back: its cluster's ring partners
    /// should skip it, or take it back.
    std::function<void()> awayChanged;
    std::function<void()> changed; ///< anything the status API shows, besides metrics
    /// Check that peers can dial the node at `address` (each registration); the verdict
    /// comes back through setReachability().
    std::function<void(const std::string &nodeId, const std::string &address)> probe;
    /// Tickets for a relayed link from `dialer` to `acceptor`; throws rookery::Error
    /// saying why not (the relay is full, a node is at its cap). Empty: no relay here.
    /// Not called under the registry's lock.
    std::function<RelayTickets(const std::string &dialer, const std::string &acceptor)> relay;
    /// A piece of a dataset file for a registered node (DatasetServer::serve). Empty: this
    /// coordinator serves no dataset. Not called under the registry's lock.
    std::function<net::DataPiece(const net::DataRequest &)> data;
};

/// Link figures a heartbeat may bring the planner (a node links to a handful of peers).
inline constexpr size_t kMaxLinkFigures = 64;

/// The coordinator's membership: registers nodes (checking replays, issuing their
/// certificates), answers heartbeats, detects failures by timeout, and pushes the
/// planner's assignments. Every link event, tick and publish takes one mutex for a
/// short time; messages are encoded and sent outside it.
///
/// Thread safety: all methods may be called from any thread.
class NodeRegistry
{
public:
    using Clock = std::chrono::steady_clock;

    NodeRegistry(RegistryConfig config, const net::CertificateAuthority &ca, CoordinatorStore *store,
                 ReplayGuard &replay, RegistryHooks hooks);
    ~NodeRegistry();

    /// Nodes from the database, all Lost until they reconnect (grace: `grace` from now).
    /// `planned` are those the planner holds.
    void restore(const StoredState &state, const std::vector<std::string> &planned, std::chrono::milliseconds grace);

    // Link events (network threads).
    void opened(const std::shared_ptr<net::Link> &link);
    void message(const std::shared_ptr<net::Link> &link, net::Message &&message);
    void closed(const std::shared_ptr<net::Link> &link);

    /// Heartbeat timeouts and grace expiry (the coordinator's worker thread).
    void tick(Clock::time_point now);
    /// The planner's new assignments: each gets the node's next version, is stored and
    /// pushed to the node if it is online. A waiting node that stays waiting is told only
    /// how its reachability check ended, or that it became (un)reachable; with
    /// `deferVerdicts` (a registration storm) not even that: nobody dials a waiting node,
    /// so it hears the verdict with its placement or after the storm. Returns the ids
    /// deferred so: nothing was stored or sent for them, so publish them again later.
    std::vector<std::string> publish(const std::map<std::string, Assignment> &changed, bool deferVerdicts = false);
    /// A reachability check's verdict; ignored when the node moved since it began.
    void setReachability(const std::string &nodeId, const std::string &address, bool reachable,
                         const std::string &note);
    /// Quarantines a node for what the coordinator found itself (a capacity claim its
    /// training belies), as if its peers had reported it: re-planned away, told why, its
    /// key banned for the run. False for unknown nodes and those already quarantined.
    bool quarantine(const std::string &nodeId, const std::string &why);
    /// Peer addresses of every node, by id.
    std::map<std::string, std::string> addresses() const;
    /// The nodes the reachability check could not dial.
    std::set<std::string> unreachable() const;
    /// Placed nodes that are away: lost (inside the grace) or paused by their governor.
    /// Rings skip their clusters (skipAway).
    std::set<std::string> away() const;
    /// Nodes whose last report says they have done at least `steps` optimizer steps:
    /// those that trained the run to its end.
    std::set<std::string> reachedStep(int64_t steps) const;
    /// Online nodes whose reachability check is under way.
    size_t checkingCount() const;
    /// The latest report of every online node that sent one since the last call.
    std::vector<StoredMetric> takeMetrics(int64_t atMs);
    /// The measured uploads to neighbours (bytes/s by peer id) of every node whose
    /// heartbeats changed them since the last call, whole, by node id.
    std::map<std::string, std::map<std::string, double>> takeMeasuredLinks();
    /// The compute offer scales (NodeMetrics.compute_offer_scale) that changed since the
    /// last call, by node id.
    std::map<std::string, double> takeOfferScales();

    std::vector<NodeStatus> snapshot() const;
    RegistryCounters counters() const;
    size_t onlineCount() const;
    /// Every node's current assignment, by id (tests, status).
    std::map<std::string, Assignment> assignments() const;

    struct Record;

private:
    struct Outbox;
    void onRegister(const std::shared_ptr<net::Link> &link, const net::Register &r, Outbox &out);
    void onHeartbeat(const std::shared_ptr<net::Link> &link, const net::Heartbeat &h, Outbox &out);
    void onLeave(const std::shared_ptr<net::Link> &link, const net::Leave &l);
    /// What a heartbeat's report changed: paused or resumed, asleep meanwhile. Under m_mutex.
    void noteActivity(Record &record, const NodeReport &before, bool wasAway, Clock::time_point now);
    void onRelayRequest(const std::shared_ptr<net::Link> &link, const net::RelayRequest &r, Outbox &out);
    struct VolunteerRelay
    {
        std::string nodeId;
        std::string address; ///< "host:port" of its relay
        std::shared_ptr<net::Link> link;
    };
    /// A volunteer's relay for a pair (not one of the two): one that opted in and can be
    /// dialled, the one given the fewest pairs so far. Under m_mutex.
    std::optional<VolunteerRelay> volunteerRelay(const std::string &a, const std::string &b);
    void refuse(const std::shared_ptr<net::Link> &link, net::CoordinatorErrorCode code, const std::string &reason,
                Outbox &out);
    void lose(Record &record, Clock::time_point now, const std::string &why);
    /// Into the planner, once its reachability verdict is in (or overdue). Under m_mutex.
    void placeAfterVerdict(Record &record);
    /// A heartbeat's complaints about other nodes: quarantines those they condemn. Under m_mutex.
    void weighComplaints(Record &reporter, Outbox &out);
    void quarantine(Record &record, const std::string &why, Outbox &out);
    /// The ban list as it goes on the wire: the newest ids within the list limit.
    net::Message banListMessage() const;
    void persist(const Record &record) const;

    const RegistryConfig m_config;
    const net::CertificateAuthority &m_ca;
    CoordinatorStore *m_store;
    ReplayGuard &m_replay;
    RegistryHooks m_hooks;

    mutable std::mutex m_mutex;
    std::map<std::string, std::unique_ptr<Record>> m_nodes;
    std::unordered_map<const net::Link *, std::string> m_linkNode; ///< registered links -> node id
    /// Open links that have sent nothing yet, with when they opened.
    std::unordered_map<const net::Link *, std::pair<std::weak_ptr<net::Link>, Clock::time_point>> m_unregistered;
    RegistryCounters m_counters;
    /// The heartbeat interval nodes are told now (heartbeatPace of the nodes online).
    std::chrono::milliseconds m_pace;
    AddressLimits m_limits;
    /// Registered links -> the host they come from, counted in m_limits until they close.
    std::unordered_map<const net::Link *, std::string> m_linkHost;
    /// Addresses of quarantined nodes: no new keys from them for the run (not kept across
    /// a restart; their keys are).
    std::set<std::string> m_bannedHosts;
    net::BanList m_banned; // quarantined node ids, pushed to every node (newest last)
    /// Link figures changed since takeMeasuredLinks(), by node id.
    std::map<std::string, std::map<std::string, double>> m_linksChanged;
    std::map<std::string, double> m_offersChanged; ///< since takeOfferScales()
};

} // namespace rookery::coord
