// SPDX-License-Identifier: GPL-3.0-or-later
// The simulator's re-plans: a swarm's clusters rebuilt from the real planner's plan.
#include "engine/sim/simulator_impl.h"

namespace rookery::sim {

// Replaces the swarm's clusters with the plan's: unchanged pipelines keep running,
// changed ones restart (fetching the layers they took over).
void Simulator::Impl::rebuild(int s, double now)
{
    Swarm &w = swarms[size_t(s)];
    const auto &plan = w.plan->plan();
    const auto &ids = w.plan->ids();
    std::vector<int> globalOf(ids.size());
    for (size_t i = 0; i < ids.size(); ++i)
        globalOf[i] = std::stoi(ids[i].substr(1));

    std::map<int, int> old = std::move(w.clusterOfPlan);
    w.clusterOfPlan.clear();
    for (auto &[planCluster, index] : old)
        for (int m : clusters[size_t(index)].members)
            nodes[size_t(m)].cluster = -1;
    std::set<int> kept;
    std::vector<std::tuple<int, size_t, size_t>> before(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        Node &n = nodes[size_t(globalOf[i])];
        before[i] = {n.planCluster, n.first, n.last};
        n.planCluster = -1;
    }
    for (size_t pc = 0; pc < plan.pipelines.size(); ++pc) {
        const auto &p = plan.pipelines[pc];
        if (p.stages.empty())
            continue;
        Cluster c;
        c.coordinator = s;
        c.since = now;
        std::vector<const Volunteer *> vols;
        for (size_t i : p.stages) {
            c.members.push_back(globalOf[i]);
            vols.push_back(&pop.volunteers[size_t(globalOf[i])]);
        }
        c.cuts = p.partition.cuts();
        c.timing = timePipeline(costs, options, p.partition, vols, pop.network, cfg.maxWindow,
                                cfg.peerCompression == net::Compression::None ? 4 : 2);
        double fetchSeconds = 0;
        for (size_t st = 0; st < p.stages.size(); ++st) {
            const size_t i = p.stages[st];
            Node &n = nodes[size_t(globalOf[i])];
            const auto &sp = p.partition.stages[st];
            n.planCluster = int(pc);
            n.stage = int(st);
            n.first = sp.firstLayer;
            n.last = sp.lastLayer;
            const auto [oldCluster, oldFirst, oldLast] = before[i];
            int64_t newLayers = 0;
            double newBytes = 0;
            for (size_t l = sp.firstLayer; l < sp.lastLayer; ++l)
                if (oldCluster != int(pc) || l < oldFirst || l >= oldLast) {
                    ++newLayers;
                    newBytes += double(costs[l].parameters) * kFloatBytes;
                }
            if (oldCluster != int(pc) || oldFirst != n.first || oldLast != n.last)
                ++r.assignmentPushes;
            if (oldCluster >= 0) { // a newcomer's layers are its start, not churn
                r.layersMoved += newLayers;
                r.bytesMoved += newBytes;
            }
            fetchSeconds = std::max(fetchSeconds, newBytes / pop.volunteers[size_t(globalOf[i])].downBytesPerSecond);
        }
        const auto previous = old.find(int(pc));
        const Cluster *was = previous == old.end() ? nullptr : &clusters[size_t(previous->second)];
        if (was && was->members == c.members && was->cuts == c.cuts) {
            // Unchanged: it keeps running under its old index (its rings are re-timed below).
            const int index = previous->second;
            kept.insert(index);
            for (int m : c.members)
                nodes[size_t(m)].cluster = index;
            w.clusterOfPlan[int(pc)] = index;
            continue;
        } else {
            c.restartUntil = now + cfg.restartSeconds + fetchSeconds;
            if (was && was->stalled == 0 && now >= was->restartUntil)
                r.samplesLostInFlight += double(was->timing.window * cfg.microbatch);
        }
        for (int m : c.members) {
            const Node &n = nodes[size_t(m)];
            if (!n.online || n.paused)
                ++c.stalled;
        }
        const int index = int(clusters.size());
        for (int m : c.members)
            nodes[size_t(m)].cluster = index;
        if (c.restartUntil > now)
            queue.push(c.restartUntil, kRestartDone, index);
        clusters.push_back(std::move(c));
        w.clusterOfPlan[int(pc)] = index;
    }
    // The changed and dissolved ones stop; their memory goes (events still naming them
    // find them dead).
    for (auto &[planCluster, index] : old) {
        if (kept.count(index))
            continue;
        Cluster &c = clusters[size_t(index)];
        c.alive = false;
        refresh(index, now);
        flush(c, now);
        std::vector<int>().swap(c.members);
        std::vector<size_t>().swap(c.cuts);
        c.timing = {};
    }
    for (size_t i = 0; i < ids.size(); ++i)
        if (std::get<0>(before[i]) >= 0 && nodes[size_t(globalOf[i])].planCluster < 0)
            ++r.assignmentPushes; // now waiting
    timeRings(s, globalOf, w.clusterOfPlan);
    for (const auto &[pc, index] : w.clusterOfPlan)
        refresh(index, now);
}

} // namespace rookery::sim
