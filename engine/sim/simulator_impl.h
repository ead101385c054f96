// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/sim: the simulator's state, shared by its .cpp files.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "engine/common/error.h"
#include "engine/coord/node_registry.h"
#include "engine/coord/plan_state.h"
#include "engine/coord/registration_check.h"
#include "engine/device/capability_profile.h"
#include "engine/model/model_zoo.h"
#include "engine/sim/event_queue.h"
#include "engine/sim/simulator.h"
#include "engine/sim/timing.h"

namespace rookery::sim {
namespace detail {

enum Kind { kSessionStart, kSessionEnd, kPauseStart, kPauseEnd, kGraceExpiry, kRound, kRestartDone, kBucket };

constexpr double kFloatBytes = 4; // weights are float32 (what a node flattens, and what moves with layers)

struct Node
{
    bool online = false;
    bool paused = false;
    bool planned = false; ///< the coordinator's planner holds it
    bool lost = false;    ///< silent, inside the grace
    uint64_t token = 0;
    int cluster = -1; ///< index into Impl::clusters
    int stage = 0;
    int planCluster = -1;
    size_t first = 0, last = 0;
    double busySeconds = 0, heldSeconds = 0;
};

struct Cluster
{
    int coordinator = 0;
    bool alive = true;
    bool active = false;
    std::vector<int> members; ///< volunteers in stage order
    std::vector<size_t> cuts;
    PipelineTiming timing;
    double averagingSeconds = 0;  ///< per round, the slowest stage's rings
    double ringBytesPerRound = 0; ///< what its stages send in one round
    double samplesPerSecond = 0;  ///< when active
    int stalled = 0;              ///< members offline or paused
    double restartUntil = 0;
    double since = 0;
};

struct Swarm
{
    std::unique_ptr<coord::PlanState> plan;
    std::vector<std::string> leaves;
    std::vector<std::pair<std::string, swarm::Capacity>> joins;
    bool roundScheduled = false;
    double lastRound = -1e30;
    std::map<int, int> clusterOfPlan; ///< plan cluster id -> Impl::clusters index
};

} // namespace detail

using namespace detail;

struct Simulator::Impl
{
    Population pop;
    SimConfig cfg;
    swarm::PlanModel model;
    std::vector<model::LayerCost> costs;
    model::PartitionOptions options;
    std::vector<swarm::Capacity> capacities;
    std::vector<Node> nodes;
    std::vector<Cluster> clusters;
    std::vector<Swarm> swarms;
    EventQueue queue;
    SimResult r;
    double totalRate = 0, lastT = 0, online = 0, onlineSeconds = 0;
    double discreteMessages = 0;

    Impl(Population p, SimConfig c)
        : pop(std::move(p))
        , cfg(std::move(c))
    {
        const coord::RegistryConfig defaults;
        auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
        if (cfg.heartbeatSeconds < 0)
            cfg.heartbeatSeconds = secs(defaults.heartbeatInterval);
        if (cfg.heartbeatTimeoutSeconds < 0)
            cfg.heartbeatTimeoutSeconds = secs(defaults.heartbeatTimeout);
        if (cfg.rejoinGraceSeconds < 0)
            cfg.rejoinGraceSeconds = secs(defaults.rejoinGrace);
        if (cfg.coordinators < 1 || cfg.averagingInterval < 1 || cfg.microbatch < 1)
            throw Error("sim: coordinators, averaging interval and microbatch must be at least 1");
        if (!(cfg.ringFlopsPerByte >= 0))
            throw Error("sim: a ring's work per byte must be 0 or more");
        if (cfg.maxWindow < 0)
            throw Error("sim: the window cap must be 0 (the nodes' default) or more");
        if (cfg.maxWindow == 0)
            cfg.maxWindow = train::kDefaultMaxWindow;
        model = {cfg.modelSpec.layers.empty() ? model::modelByName(cfg.model) : cfg.modelSpec, cfg.microbatch,
                 cfg.optimizerStateCopies};
        costs = model::layerCosts(model.spec, cfg.microbatch);
        options = model::partitionOptionsFor(model.spec, cfg.microbatch, cfg.optimizerStateCopies);
        swarm::FormationOptions formation;
        formation.seed = cfg.seed;
        formation.clusterSize = cfg.clusterSize;
        for (int i = 0; i < cfg.coordinators; ++i)
            swarms.emplace_back().plan = std::make_unique<coord::PlanState>(model, formation);
        // The capability model: the profile a node would send, read as the coordinator does.
        for (const auto &v : pop.volunteers) {
            device::CapabilityProfile profile;
            profile.gflopsAllThreads = v.gflops;
            profile.ramAvailableBytes = uint64_t(v.memoryBytes);
            capacities.push_back(coord::capacityOf(device::toJson(profile), v.upBytesPerSecond));
        }
        nodes.resize(pop.volunteers.size());
    }

    int swarmOf(size_t v) const { return int(v % size_t(cfg.coordinators)); }

    // Integrates the swarm's rate and the online count up to now.
    void advance(double now)
    {
        r.samples += totalRate * (now - lastT);
        onlineSeconds += online * (now - lastT);
        lastT = now;
    }

    void flush(Cluster &c, double now)
    {
        const double dt = now - c.since;
        c.since = now;
        if (dt <= 0)
            return;
        if (c.active) {
            const double samples = c.samplesPerSecond * dt;
            r.bytesWithinClusters += samples * c.timing.bytesPerMicrobatch / double(cfg.microbatch);
            r.bytesAcrossClusters += samples * c.ringBytesPerRound / double(cfg.averagingInterval * cfg.microbatch);
            const double microbatches = samples / double(cfg.microbatch);
            for (size_t s = 0; s < c.members.size(); ++s)
                nodes[size_t(c.members[s])].busySeconds += c.timing.computeSeconds[s] * microbatches;
        } else {
            r.stalledClusterSeconds += dt;
        }
        for (int m : c.members)
            nodes[size_t(m)].heldSeconds += dt;
    }

    void refresh(int index, double now)
    {
        Cluster &c = clusters[size_t(index)];
        const bool active = c.alive && c.stalled == 0 && now >= c.restartUntil;
        if (active == c.active)
            return;
        flush(c, now);
        totalRate += active ? c.samplesPerSecond : -c.samplesPerSecond;
        c.active = active;
    }

    // A member stops (silent or paused); a silent one breaks the pipeline's links.
    void stall(int index, double now, bool broken)
    {
        Cluster &c = clusters[size_t(index)];
        if (broken && c.active)
            r.samplesLostInFlight += double(c.timing.window * cfg.microbatch);
        ++c.stalled;
        refresh(index, now);
    }

    void unstall(int index, double now, bool restart)
    {
        Cluster &c = clusters[size_t(index)];
        --c.stalled;
        if (restart && c.stalled == 0) {
            c.restartUntil = now + cfg.restartSeconds;
            queue.push(c.restartUntil, kRestartDone, index);
        }
        refresh(index, now);
    }

    void scheduleRound(int s, double now)
    {
        Swarm &w = swarms[size_t(s)];
        if (w.roundScheduled)
            return;
        w.roundScheduled = true;
        double at = std::max(now, w.lastRound + cfg.planRoundSeconds);
        if (!w.plan->hasPlan())
            at = std::max(at, cfg.firstPlanDelaySeconds);
        queue.push(at, kRound, s);
    }

    void onSessionStart(size_t v, double now)
    {
        Node &n = nodes[v];
        n.online = true;
        online += 1;
        discreteMessages += 2; // Register, RegisterReply
        if (n.lost) {
            n.lost = false;
            ++n.token;
            if (n.cluster >= 0 && !n.paused)
                unstall(n.cluster, now, true);
            return;
        }
        if (!n.planned) {
            swarms[size_t(swarmOf(v))].joins.push_back({nodeId(v), capacities[v]});
            n.planned = true;
            ++r.joins;
            scheduleRound(swarmOf(v), now);
        }
    }

    void onSessionEnd(size_t v, double now)
    {
        Node &n = nodes[v];
        n.online = false;
        online -= 1;
        Swarm &w = swarms[size_t(swarmOf(v))];
        const std::string id = nodeId(v);
        auto pending = std::find_if(w.joins.begin(), w.joins.end(), [&](const auto &j) { return j.first == id; });
        if (pending != w.joins.end()) {
            w.joins.erase(pending);
            n.planned = false;
            --r.joins;
            return;
        }
        if (!n.planned)
            return;
        if (n.cluster < 0 && n.planCluster < 0) { // only waiting: it leaves the planner at once
            w.leaves.push_back(id);
            n.planned = false;
            ++r.leaves;
            scheduleRound(swarmOf(v), now);
            return;
        }
        n.lost = true;
        ++n.token;
        queue.push(now + cfg.heartbeatTimeoutSeconds + cfg.rejoinGraceSeconds, kGraceExpiry, int64_t(v), n.token);
        if (n.cluster >= 0 && !n.paused)
            stall(n.cluster, now, true);
    }

    void onGraceExpiry(size_t v, uint64_t token, double now)
    {
        Node &n = nodes[v];
        if (!n.lost || n.token != token)
            return;
        n.lost = false;
        n.planned = false;
        swarms[size_t(swarmOf(v))].leaves.push_back(nodeId(v));
        ++r.leaves;
        scheduleRound(swarmOf(v), now);
    }

    void onPause(size_t v, bool start, double now)
    {
        Node &n = nodes[v];
        if (n.paused == start)
            return;
        n.paused = start;
        if (n.cluster < 0 || !n.online)
            return;
        if (start)
            stall(n.cluster, now, false);
        else
            unstall(n.cluster, now, false);
    }

    void onRound(int s, double now);
    void rebuild(int s, double now);
    void timeRings(int s, const std::vector<int> &globalOf, const std::map<int, int> &clusterOfPlan);
    void bucket(double now, double &lastSamples, double &lastMessages, double &lastOnline, int64_t &lastReplans);
};

} // namespace rookery::sim
