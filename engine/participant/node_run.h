// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/participant: SwarmNode's state and one run of it (NodeRun), shared
// by swarm_node.cpp (following assignments, the stage, leaving) and node_run_join.cpp
// (the coordinator link, the relay it may offer, the peer mesh).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/log.h"
#include "engine/coord/coordinator_client.h"
#include "engine/device/suspend_detector.h"
#include "engine/net/net_context.h"
#include "engine/participant/dataset_fetcher.h"
#include "engine/participant/node_preparation.h"
#include "engine/participant/peer_complaints.h"
#include "engine/participant/peer_mesh.h"
#include "engine/participant/router_port.h"
#include "engine/participant/stage_slot.h"
#include "engine/participant/swarm_node.h"
#include "engine/relay/relay_server.h"

namespace rookery::participant {

struct SwarmNode::Impl
{
    SwarmNodeSettings settings;
    Callbacks callbacks;

    std::mutex mutex; // events from the coordinator link
    std::condition_variable wake;
    std::optional<coord::Registration> registration;
    std::optional<coord::Assignment> newAssignment;
    std::vector<net::RelayGrant> relayGrants;       ///< for the mesh, in the order they came
    std::optional<std::vector<std::string>> banned; ///< the coordinator's newest ban list, for the mesh
    std::string lastError;

    std::shared_ptr<device::Governor> governor; // outlives every stage and link

    StageSlot stage; // the mesh's events reach the current stage through it

    std::mutex joinMutex; // orders the join callbacks
    JoinState joinState;

    /// Applies `change` to the join state and tells the callback when that changed it.
    template <class Change> void updateJoin(Change &&change)
    {
        std::lock_guard lock(joinMutex);
        JoinState next = joinState;
        change(next);
        if (next == joinState)
            return;
        joinState = next;
        if (callbacks.join)
            callbacks.join(joinState);
    }

    void say(const std::string &text)
    {
        log::info("node", text);
        if (callbacks.message)
            callbacks.message(text);
    }

    void warn(const std::string &text)
    {
        log::warning("node", text);
        if (callbacks.warning)
            callbacks.warning(text);
    }
};

/// The volunteer's upload cap while active, in bytes/s (0: none): the most the planner
/// is told of this node's upload, to the coordinator or to a neighbour.
double uploadCapBytesPerSecond(const device::GovernorSettings &g);

// One call of SwarmNode::run(), in its phases: prepare (everything that can fail on bad
// input), join (the coordinator link), follow the assignments until it is time to go,
// leave. The members go in the reverse of their order: the mesh, the coordinator link,
// the network context, and last the data and the checkpoint store (leave() has already
// destroyed the stage, which uses them all).
class NodeRun
{
public:
    NodeRun(SwarmNode::Impl &node, const std::atomic<bool> *stop)
        : m_node(node)
        , m_stop(stop)
        , m_prepared(prepareSwarmNode(node.settings))
    { }

    SwarmNodeSummary run()
    {
        join();
        followAssignments();
        return leave();
    }

private:
    bool stopRequested() const { return m_stop && m_stop->load(); }
    void join();
    uint16_t startRelay(); // the port peers reach it at
    coord::CoordinatorClientEvents coordinatorEvents();
    void followAssignments();
    std::optional<coord::Assignment> awaitEvents(); // and opens the mesh once registered
    void openMesh(const coord::Registration &registration);
    void noteStillWaiting();
    std::string gaveUpJoining();             // why, once joining cannot succeed; else "".
    bool follow(const coord::Assignment &a); // false: the coordinator stopped this node
    void startStage(const coord::Assignment &a);
    /// What a root stage of `a` trains and tests on: this machine's own copy when it is
    /// the run's dataset (same content hash), else fetched from the coordinator. Throws
    /// rookery::Error when neither can be had.
    StageData rootData(const coord::Assignment &a);
    bool tend(AssignedStage &stage); // false: time to leave
    /// Heartbeats carry this from now on, with whether the governor holds the work, why,
    /// and how long the computer has slept.
    void sendReport(coord::NodeReport report, AssignedStage::Phase phase);
    bool readyToLeave(const StageProgress &p); // the stage finished: true when the node may go now
    // Its CPU caps' offer now over the one it registered with (its volunteer may have
    // changed them through the control API or the desktop); 0 when unknown.
    double computeOfferScale() const;
    SwarmNodeSummary leave();

    SwarmNode::Impl &m_node;
    const std::atomic<bool> *m_stop;
    PreparedNode m_prepared;
    net::NetContext m_net;
    // Before the client: its events reach the relay.
    std::unique_ptr<relay::RelayServer> m_relay; ///< for other volunteers, when this node offers one
    std::unique_ptr<RouterPort> m_relayRouterPort;
    std::unique_ptr<data::ShardStore> m_dataCache; ///< <data dir>/data-cache: the dataset shards fetched
    std::unique_ptr<DatasetFetcher> m_fetcher;     ///< before the client: its events reach it
    std::optional<std::string> m_localDatasetSha;  ///< the content hash of this machine's own copy, once known
    std::unique_ptr<coord::CoordinatorClient> m_client;
    std::unique_ptr<PeerMesh> m_mesh;
    std::string m_meshCertificate;            // the certificate the mesh presents (a renewal replaces it)
    std::unique_ptr<RouterPort> m_routerPort; ///< the peer port forwarded on the home router
    coord::RunConfig m_run;
    std::optional<coord::Assignment> m_current;
    SwarmNodeSummary m_summary;
    std::chrono::steady_clock::time_point m_lastWaitNote;
    device::SuspendDetector m_suspend;    ///< notices that the computer slept
    std::chrono::milliseconds m_slept{0}; ///< asleep this long in all since the node started
    std::optional<std::chrono::steady_clock::time_point> m_finishedAt;
    bool m_saidRelayStays = false;
    /// Peers whose values this node refused, for its heartbeats; a refusal wakes the loop,
    /// which reports it at once (CoordinatorClient::report).
    std::shared_ptr<PeerComplaints> m_complaints =
        std::make_shared<PeerComplaints>([&wake = m_node.wake] { wake.notify_all(); });
};

} // namespace rookery::participant
