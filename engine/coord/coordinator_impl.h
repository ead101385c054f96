// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/coord: the Coordinator's state, shared by coordinator.cpp (life
// cycle, worker, status), coordinator_resume.cpp (the stored run) and
// coordinator_planning.cpp (planning rounds).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/coord/claim_watch.h"
#include "engine/coord/coordinator.h"
#include "engine/coord/coordinator_identity.h"
#include "engine/coord/coordinator_store.h"
#include "engine/coord/dataset_server.h"
#include "engine/coord/invite_book.h"
#include "engine/coord/node_registry.h"
#include "engine/coord/plan_state.h"
#include "engine/coord/reachability_probe.h"
#include "engine/coord/status_json.h"
#include "engine/coord/status_server.h"
#include "engine/coord/straggler_watch.h"
#include "engine/net/listener.h"
#include "engine/relay/relay_server.h"

namespace rookery::coord {
namespace coordinator_detail {

using Clock = std::chrono::steady_clock;
inline constexpr const char *kArea = "coord";

inline swarm::PlanModel planModelOf(const RunConfig &run, const CoordinatorSettings &settings)
{
    return {run.model, run.microbatch, train::stateCopies(run.optimizer),
            settings.relay ? double(settings.relayBytesPerSecondPerPair) : 0.0};
}

} // namespace coordinator_detail

struct Coordinator::Impl
{
    using Clock = coordinator_detail::Clock;

    struct Pending
    {
        bool leave = false;
        bool join = false;
        swarm::Capacity capacity;
    };

    explicit Impl(CoordinatorSettings s);
    void start();
    void stop();
    void restore(const StoredState &stored);
    void work();
    void maybePlan(Clock::time_point now);
    bool joinsDue(Clock::time_point now, size_t joins) const; ///< under inboxMutex
    void trimMemory(Clock::time_point now);
    void round(Clock::time_point now, std::map<std::string, Pending> events, bool hold, bool full);
    /// The link figures nodes reported since the last call, into the planner (used at
    /// the next cut of their clusters); every pass of the worker, before it plans.
    void takeMeasuredLinks();
    /// `hold`: a registration storm is under way (holdStormGrowth).
    /// What a round told: assignments handed to the registry (it may skip some waiting
    /// ones), and how many of them held a storm's growth back.
    struct Published
    {
        size_t pushed = 0;
        size_t held = 0;
    };
    Published publishPlacements(Clock::time_point now, bool hold);
    void checkStragglers(Clock::time_point now); ///< coordinator_stragglers.cpp
    void checkClaims(Clock::time_point now);     ///< coordinator_stragglers.cpp
    /// Nodes whose volunteers changed their CPU caps: their clusters re-cut for the
    /// compute they offer now (coordinator_stragglers.cpp).
    void checkOffers();
    /// After a re-cut outside a planning round: tell the nodes, store the plan.
    void publishRecut(Clock::time_point now);
    bool severalClustersWork() const;
    std::vector<StageSpeed> stageSpeeds() const; ///< placed, training stages: plan against measurement
    StatusDocument statusDocument(StatusView view);
    StatusInputs statusInputs();

    void enqueueJoin(const std::string &id, const swarm::Capacity &c)
    {
        std::lock_guard lock(inboxMutex);
        lastArrival = Clock::now();
        if (!firstHeldJoin)
            firstHeldJoin = lastArrival;
        auto &p = pending[id];
        p.join = true;
        p.capacity = c;
    }
    void enqueueLeave(const std::string &id)
    {
        std::lock_guard lock(inboxMutex);
        auto &p = pending[id];
        p.join = false; // joined and left before the planner saw it: nothing to place
        p.leave = true;
    }

    CoordinatorSettings settings;
    const Clock::time_point startedAt = Clock::now();
    CoordinatorIdentity identity;
    CoordinatorStore store;
    RunConfig run;
    ReplayGuard replay;

    // The planner's own state: touched by the worker thread only (and the constructor).
    PlanState plan;
    std::map<std::string, Assignment> published; ///< what the planner last handed out, by node
    std::optional<Clock::time_point> holdSince;  ///< since when the volunteers could hold the model
    Clock::time_point lastRound;
    std::optional<Clock::time_point> trimAt;    ///< when to return freed heap pages to the system
    std::optional<Clock::time_point> heldSince; ///< since when a storm's growth is held back from placed nodes
    StragglerWatch stragglers;
    std::map<std::string, double> offerPending; ///< compute offer scales not yet taken by the plan
    Clock::time_point nextStragglerCheck;
    ClaimWatch claims;
    std::set<std::string> claimNoted; ///< nodes whose first measurement against their claim was logged
    Clock::time_point nextClaimCheck;

    std::mutex inboxMutex;
    std::condition_variable inboxWake;
    std::map<std::string, Pending> pending;
    bool republish = false, fullReplan = false, stopping = false;
    Clock::time_point lastArrival;                  ///< the latest join queued
    std::optional<Clock::time_point> firstHeldJoin; ///< the oldest join still pending

    std::unique_ptr<InviteBook> invites;    ///< null when admission is open
    std::unique_ptr<DatasetServer> dataset; ///< null when the run's dataset is not served
    std::unique_ptr<NodeRegistry> registry;
    std::atomic<uint64_t> statusVersion{1};
    std::atomic<uint64_t> planRounds{0};
    std::mutex summaryMutex;
    PlanSummary summary;
    std::mutex statusMutex;
    struct StatusCache // one per view, built when asked for
    {
        std::shared_ptr<const std::string> json;
        uint64_t version = 0;
        Clock::time_point at;
    };
    StatusCache statusCaches[2]; // by StatusView

    // Declared after everything their threads call into, so destroyed before it.
    std::unique_ptr<net::NetContext> net;
    std::unique_ptr<net::Listener> listener;
    std::unique_ptr<StatusServer> status;
    std::unique_ptr<ReachabilityProbe> probe;        ///< null when reachability is not checked
    std::unique_ptr<relay::RelayServer> relayServer; ///< null without a relay
    std::thread worker;
    std::string host;
    bool stopped = false;
};

} // namespace rookery::coord
