// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/replan.h"

#include <algorithm>
#include <numeric>

#include "engine/common/error.h"

namespace rookery::swarm {
namespace {

constexpr int kDeparted = -2; // in no cluster and not waiting either

int clusterCount(const std::vector<int> &clusterOf)
{
    int k = 0;
    for (int c : clusterOf)
        k = std::max(k, c + 1);
    return k;
}

int membersOf(const std::vector<int> &clusterOf, int cluster)
{
    return int(std::count(clusterOf.begin(), clusterOf.end(), cluster));
}

// Places volunteer i where the swarm gains most: an existing cluster with room, or a new
// cluster made of the waiting volunteers (i included) if they can hold the model.
// Leaves it waiting when nothing works.
void place(const std::vector<Capacity> &v, std::vector<int> &clusterOf, size_t i, const ModelDemand &d)
{
    clusterOf[i] = -1;
    double bestSpeed = evaluate(v, clusterOf, d).swarmSpeed;
    std::vector<int> best = clusterOf;
    const int k = clusterCount(clusterOf);
    for (int c = 0; c < k; ++c) {
        if (membersOf(clusterOf, c) == 0 || membersOf(clusterOf, c) >= d.maxStages)
            continue;
        std::vector<int> trial = clusterOf;
        trial[i] = c;
        const double s = evaluate(v, trial, d).swarmSpeed;
        // Ties go to the smaller cluster id, so the result is deterministic.
        if (s > bestSpeed || (best[i] == -1 && s >= bestSpeed && bestSpeed > 0)) {
            bestSpeed = s;
            best = std::move(trial);
        }
    }
    // A new cluster: i plus waiting volunteers, fastest first, until it holds the model.
    std::vector<size_t> waiting;
    for (size_t j = 0; j < v.size(); ++j)
        if (clusterOf[j] == -1 && j != i)
            waiting.push_back(j);
    std::stable_sort(waiting.begin(), waiting.end(), [&](size_t a, size_t b) { return v[a].gflops > v[b].gflops; });
    std::vector<int> trial = clusterOf;
    trial[i] = k;
    int used = 1;
    for (size_t j : waiting) {
        if (used >= d.maxStages || evaluate(v, trial, d).clusterFeasible.back())
            break;
        trial[j] = k;
        ++used;
    }
    if (trial[i] == k) {
        const auto e = evaluate(v, trial, d);
        if (e.clusterFeasible.back() && e.swarmSpeed > bestSpeed) {
            bestSpeed = e.swarmSpeed;
            best = std::move(trial);
        }
    }
    clusterOf = std::move(best);
}

std::vector<size_t> movedBetween(const std::vector<int> &before, const std::vector<int> &after, size_t except)
{
    std::vector<size_t> moved;
    for (size_t i = 0; i < before.size(); ++i)
        if (i != except && before[i] != after[i])
            moved.push_back(i);
    return moved;
}

} // namespace

Replan planLeave(const std::vector<Capacity> &v, std::vector<int> clusterOf, size_t gone, const ModelDemand &d)
{
    if (gone >= v.size() || clusterOf.size() != v.size())
        throw Error("re-plan: volunteer " + std::to_string(gone) + " is not in the plan");
    const std::vector<int> before = clusterOf;
    const int cluster = clusterOf[gone];
    // Out of reach while the orphans are placed: place() forms new clusters from the
    // waiting volunteers (-1), and one that has left must not be among them.
    clusterOf[gone] = kDeparted;
    if (cluster >= 0 && membersOf(clusterOf, cluster) > 0 &&
        !evaluate(v, clusterOf, d).clusterFeasible[size_t(cluster)]) {
        std::vector<size_t> orphans;
        for (size_t i = 0; i < v.size(); ++i)
            if (clusterOf[i] == cluster)
                orphans.push_back(i);
        std::stable_sort(orphans.begin(), orphans.end(), [&](size_t a, size_t b) { return v[a].gflops > v[b].gflops; });
        for (size_t i : orphans)
            clusterOf[i] = -1;
        for (size_t i : orphans)
            if (clusterOf[i] == -1)
                place(v, clusterOf, i, d);
    }
    clusterOf[gone] = -1;
    return {evaluate(v, clusterOf, d), movedBetween(before, clusterOf, gone)};
}

Replan planJoin(const std::vector<Capacity> &v, std::vector<int> clusterOf, size_t joined, const ModelDemand &d)
{
    if (joined >= v.size() || clusterOf.size() != v.size())
        throw Error("re-plan: volunteer " + std::to_string(joined) + " is not in the plan");
    const std::vector<int> before = clusterOf;
    place(v, clusterOf, joined, d);
    Replan r{evaluate(v, clusterOf, d), movedBetween(before, clusterOf, joined)};
    // Waiting volunteers that now joined a new cluster with the newcomer count as moved
    // from "waiting": that is the point of waiting, so they are not reported.
    r.moved.erase(std::remove_if(r.moved.begin(), r.moved.end(), [&](size_t i) { return before[i] == -1; }),
                  r.moved.end());
    return r;
}

} // namespace rookery::swarm
