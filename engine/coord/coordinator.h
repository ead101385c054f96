// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/coord/address_limits.h"
#include "engine/coord/assignment.h"
#include "engine/coord/status_view.h"
#include "engine/net/coordinator_address.h"

namespace rookery::coord {

/// Who may join. InviteOnly: a key the coordinator does not know needs a join token
/// (`rookery-coordinator invite`; it travels in the join string). Open: anyone who can
/// reach the coordinator, which the operator must choose explicitly.
enum class Admission { InviteOnly, Open };

/// Everything rookery-coordinator can be told. Defaults suit a swarm on the Internet;
/// tests shorten the timeouts.
struct CoordinatorSettings
{
    std::filesystem::path dataDir;     ///< CA, keys, certificate and rookery.db live here
    std::string swarmName = "rookery"; ///< the CA's name
    std::string bindAddress;           ///< "": every interface, IPv4 and IPv6
    /// The host in the printed address; empty: the bind address, or this machine's
    /// host name when binding to every interface.
    std::string publicHost;
    uint16_t port = 7400;       ///< node links (TLS WebSocket); 0: ephemeral
    uint16_t statusPort = 7401; ///< the HTTPS status API; 0: ephemeral
    /// The relay for volunteers that cannot be dialled (both ends behind NAT): they run
    /// their mutual TLS through it, so it sees only ciphertext.
    bool relay = true;
    uint16_t relayPort = 7402; ///< 0: ephemeral
    size_t relayPairsPerNode = 8;
    uint64_t relayBytesPerSecondPerPair = 0; ///< each direction; 0: no cap
    RunConfig run;                           ///< the operator's run (its id is chosen by the coordinator)
    std::string jobName;                     ///< the job file's name, for the status (volunteers see it)
    Admission admission = Admission::InviteOnly;
    AddressLimitSettings addressLimits; ///< registrations and nodes per source address
    /// Connections at once from one IP address, registered or not (0: no cap).
    size_t maxLinksPerAddress = 64;
    /// Quarantine a node when one peer has refused this many of its values as poisoned
    /// (ring chunks out of all bounds), or two peers any (0: never).
    int64_t quarantineAfter = 3;

    std::chrono::milliseconds heartbeatInterval{1000};
    std::chrono::milliseconds heartbeatTimeout{5000}; ///< no heartbeat for this long: lost
    /// Heartbeats a second budgeted for all nodes together: past heartbeatInterval x this
    /// many nodes online, nodes are told a longer interval (and the timeout grows to three
    /// of them). 0: heartbeatInterval at any size. See heartbeatPace().
    double heartbeatBudget = 2000;
    /// A link that has not registered this long after it opened is closed: an idle link
    /// holds buffers, and pongs alone would keep it open for ever.
    std::chrono::milliseconds registerTimeout{10'000};
    /// How long the certificate a node gets at registration is valid; a node renews it
    /// (registers again) at half of what is left, so a node up for longer keeps linking.
    std::chrono::seconds certificateLifetime{30 * 86400};
    /// A node that is away keeps its assignment this long, so a laptop that sleeps, Wi-Fi
    /// that drops or a restart costs only the time away: lost (silent), or paused by its
    /// governor (its heartbeats say so). Meanwhile the rings skip its cluster; then the
    /// cluster is re-planned without it (a paused node is placed again when it resumes).
    std::chrono::milliseconds rejoinGrace{300'000};
    /// The grace for nodes after the coordinator itself restarts: they come back at
    /// their reconnection back-off, which grows to 30 s.
    std::chrono::milliseconds restartGrace{60'000};
    /// Once the volunteers can hold the model, wait this long for more to arrive before
    /// the first plan, so that a crowd registering together is planned together.
    std::chrono::milliseconds firstPlanDelay{3000};
    /// When this many volunteers have registered, the first plan comes at once rather
    /// than after firstPlanDelay (0: always wait). For swarms whose size is known.
    int expectNodes = 0;
    std::chrono::milliseconds planInterval{250}; ///< membership changes are planned in batches at most this often
    /// Once a plan works, arrivals are held back and planned together: a batch of joins
    /// is planned when no node has arrived for joinSettle, when its first arrival has
    /// waited joinMaxWait, or at once when it is joinGrowth times the planner's size.
    /// Every plan change re-sends rings and shard counts to the whole swarm, so during a
    /// registration storm this bounds the rounds (and pushes) to a few per node. Leaves
    /// are not held back.
    std::chrono::milliseconds joinSettle{500};
    std::chrono::milliseconds joinMaxWait{30'000};
    double joinGrowth = 2.0;
    /// While a registration storm lasts (joins waiting, or one within stormSettle), the
    /// nodes already placed are not told of the growth around them: rings, cluster
    /// counts and shards stay as they heard them, each round's newcomers ring among
    /// themselves (holdStormGrowth, engine/coord/storm_hold.h), clusters already told take
    /// no newcomer, and newcomers left waiting hear their reachability verdict later.
    /// Once the storm is over, or it has been held for stormHoldMax, everyone hears the
    /// plan as it is: a ramp costs a training node two pushes (its placement, then its
    /// rings) and a waiting one one. 300 s covers a launch's crowd (10,000 registrations
    /// took 86-144 s in bench_coordinator); it also bounds how long a storm's groups
    /// train without averaging with each other. 0: no hold.
    std::chrono::milliseconds stormSettle{3000};
    std::chrono::milliseconds stormHoldMax{300'000};
    /// Dial each node back at registration to learn whether peers can reach it
    /// (ReachabilityProbe); give up after this long. 0: never check.
    std::chrono::milliseconds reachabilityTimeout{20'000};
    std::chrono::milliseconds statusFeedInterval{1000};
    std::chrono::milliseconds statusFeedLifetime{3'600'000}; ///< a status feed is closed after this long
    std::chrono::milliseconds metricsInterval{10'000};       ///< how often node figures are written to the database
    std::chrono::hours metricsRetention{24 * 7};

    size_t maxNodes = 10'000;
    int ioThreads = 2;
    int planPopulation = 40;   ///< genetic search: individuals
    int planGenerations = 120; ///< genetic search: generations
    int clusterSize = 0;       ///< volunteers (pipeline stages) per cluster; 0: the planner decides
    /// How often measured stage speeds are compared with the plan's (StragglerWatch); a
    /// stage 1.5x slower than predicted, relative to the others, three checks running,
    /// has its capacity corrected and its cluster re-cut (docs/architecture.md,
    /// "Stragglers"). 0: never, the default while a re-cut can leave its cluster stalled
    /// (tst_swarm_straggler, disabled for that reason).
    std::chrono::milliseconds stragglerCheckInterval{0};
    /// How often each training stage's measured speed is compared with what its node's
    /// claimed GFLOP/s predict (ClaimWatch): a node under 1/1000 of its claim, three
    /// checks running, claimed compute it does not have and is quarantined. 0: never.
    std::chrono::milliseconds claimCheckInterval{2'000};
};

/// Where a coordinator keeps the datasets it serves: <dataDir>/datasets, a directory of
/// content-addressed files (data::ShardStore), and one file per dataset name, under
/// names/, holding its manifest's hash.
std::filesystem::path datasetStoreOf(const std::filesystem::path &dataDir);

/// Counters for logs, status and benchmarks.
struct CoordinatorCounters
{
    uint64_t registrations = 0;
    uint64_t refusals = 0;
    uint64_t refusedNotInvited = 0;  ///< invite-only: no valid join token
    uint64_t refusedLimited = 0;     ///< an address over its registration rate or node count
    uint64_t refusedConnections = 0; ///< connections closed at once: too many in all or from one address
    uint64_t quarantined = 0;        ///< nodes quarantined: their peers refused their values
    uint64_t heartbeats = 0;
    uint64_t assignmentPushes = 0;
    uint64_t relayGrants = 0;
    uint64_t relayedBytes = 0;
    uint64_t dataBytesServed = 0; ///< pieces of dataset files sent to nodes
    uint64_t planRounds = 0;
    size_t nodesOnline = 0;
    size_t nodesKnown = 0;
    bool planned = false;
};

/// The coordinator service: where a swarm meets. It accepts node links (TLS WebSocket,
/// PeerCheck::AnyCertificate: a node's id is the key its certificate proves), registers
/// volunteers and signs their certificates with the swarm CA, plans clusters, pipelines,
/// shards and rings with engine/swarm, re-plans as nodes join and leave, and serves its
/// status over HTTPS. Its state lives in <dataDir>/rookery.db and comes back after a
/// restart: nodes reconnect, re-register with the same identity and keep their
/// assignments.
///
/// Thread safety: all methods may be called from any thread.
class Coordinator
{
public:
    /// Loads or creates the data directory's keys and database, restores the state and
    /// starts listening. Throws rookery::Error naming what is wrong (a port in use, a
    /// damaged database, an invalid run).
    explicit Coordinator(CoordinatorSettings settings);
    ~Coordinator();
    Coordinator(const Coordinator &) = delete;
    Coordinator &operator=(const Coordinator &) = delete;

    /// Stops listening, closes every link (nodes then reconnect with back-off), writes
    /// what is pending to the database. Idempotent.
    void stop();

    /// wss://host:port/#sha256=<certificate fingerprint>: what nodes are given.
    std::string address() const;
    net::CoordinatorAddress coordinatorAddress() const;
    uint16_t port() const;
    uint16_t statusPort() const;
    uint16_t relayPort() const; ///< 0 without a relay
    const std::string &certificatePem() const;
    const std::string &caCertificatePem() const;
    const RunConfig &run() const;

    /// The document GET /v1/status serves, in the full view unless asked otherwise.
    std::string statusJson(StatusView view = StatusView::Full) const;
    /// Where the operator token is (operator_token.h): the full status view needs it.
    std::filesystem::path operatorTokenPath() const;
    CoordinatorCounters counters() const;
    /// A join string with a new invite for `uses` new volunteers, valid for `validity`
    /// (what `rookery-coordinator invite --uses N` prints). Throws rookery::Error when
    /// this coordinator is open (it needs no invites) or the values are not positive.
    std::string createInvite(int64_t uses, std::chrono::seconds validity, const std::string &note = {});
    /// Every known node's current assignment, by node id.
    std::map<std::string, Assignment> assignments() const;
    /// A whole new plan (genetic search) over the current volunteers at the next round:
    /// for an operator who wants balance back after much churn. Moves many nodes.
    void requestFullReplan();

    struct Impl;

private:
    std::unique_ptr<Impl> m;
};

} // namespace rookery::coord
