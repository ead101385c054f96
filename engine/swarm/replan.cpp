// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/replan.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "engine/common/error.h"

namespace rookery::swarm {
namespace {

constexpr int kDeparted = -2; // in no cluster and not waiting either

int membersOf(const std::vector<int> &clusterOf, int cluster)
{
    return int(std::count(clusterOf.begin(), clusterOf.end(), cluster));
}

// The swarm's speed as evaluate() reckons it (feasible clusters times the slowest), kept
// per cluster so that one cluster's change is judged without evaluating every cluster
// again: place() tries each cluster for a newcomer, and at 10,000 volunteers (3,000
// clusters) evaluating the whole swarm for each try took seconds per join.
struct SwarmSpeeds
{
    std::vector<double> speed;
    int feasible = 0;
    double slowest = std::numeric_limits<double>::infinity(), secondSlowest = slowest;
    int slowestCluster = -1;

    explicit SwarmSpeeds(std::vector<double> s)
        : speed(std::move(s))
    {
        for (size_t c = 0; c < speed.size(); ++c) {
            if (speed[c] <= 0)
                continue;
            ++feasible;
            if (speed[c] < slowest) {
                secondSlowest = slowest;
                slowest = speed[c];
                slowestCluster = int(c);
            } else if (speed[c] < secondSlowest) {
                secondSlowest = speed[c];
            }
        }
    }
    static double of(int feasible, double slowest) { return feasible ? feasible * slowest : 0; }
    double now() const { return of(feasible, slowest); }
    // With cluster c at speed s instead.
    double with(int c, double s) const
    {
        const bool was = speed[size_t(c)] > 0;
        const double others = c == slowestCluster ? secondSlowest : slowest; // the slowest but c
        return of(feasible - int(was) + int(s > 0), s > 0 ? std::min(others, s) : others);
    }
    // With one more cluster at speed s.
    double plus(double s) const { return of(feasible + int(s > 0), s > 0 ? std::min(slowest, s) : slowest); }
};

// The speed of the cluster of `members` (indices, in order) and perhaps `extra`, summed
// in index order as evaluate() does.
double speedOf(const std::vector<Capacity> &v, const std::vector<size_t> &members, size_t extra, const ModelDemand &d)
{
    std::vector<Capacity> m;
    m.reserve(members.size() + 1);
    bool added = extra >= v.size();
    for (size_t j : members) {
        if (!added && extra < j) {
            m.push_back(v[extra]);
            added = true;
        }
        m.push_back(v[j]);
    }
    if (!added)
        m.push_back(v[extra]);
    return clusterSpeed(m, d);
}

// Places volunteer i where the swarm gains most: an existing cluster with room, or a new
// cluster made of the waiting volunteers (i included) if they can hold the model.
// Leaves it waiting when nothing works. The same choice as evaluating the whole swarm
// for every try, at O(volunteers) a join. Clusters in `closed` are not joined.
void place(const std::vector<Capacity> &v, std::vector<int> &clusterOf, size_t i, const ModelDemand &d,
           const std::set<int> &closed = {})
{
    clusterOf[i] = -1;
    const auto members = membersByCluster(clusterOf);
    const int k = int(members.size());
    std::vector<double> speeds(static_cast<size_t>(k));
    for (int c = 0; c < k; ++c)
        speeds[size_t(c)] = speedOf(v, members[size_t(c)], v.size(), d);
    const SwarmSpeeds swarm(std::move(speeds));
    double bestSpeed = swarm.now();
    int bestCluster = -1;
    for (int c = 0; c < k; ++c) {
        const size_t n = members[size_t(c)].size();
        if (n == 0 || int(n) >= d.maxStages || closed.count(c))
            continue;
        const double s = swarm.with(c, speedOf(v, members[size_t(c)], i, d));
        // Ties go to the smaller cluster id, so the result is deterministic.
        if (s > bestSpeed || (bestCluster == -1 && s >= bestSpeed && bestSpeed > 0)) {
            bestSpeed = s;
            bestCluster = c;
        }
    }
    // A new cluster: i plus waiting volunteers, fastest first, until it holds the model.
    std::vector<size_t> waiting;
    for (size_t j = 0; j < v.size(); ++j)
        if (clusterOf[j] == -1 && j != i)
            waiting.push_back(j);
    std::stable_sort(waiting.begin(), waiting.end(), [&](size_t a, size_t b) { return v[a].gflops > v[b].gflops; });
    std::vector<size_t> formed{i}; // in index order
    for (size_t j : waiting) {
        if (int(formed.size()) >= d.maxStages || speedOf(v, formed, v.size(), d) > 0)
            break;
        formed.insert(std::upper_bound(formed.begin(), formed.end(), j), j);
    }
    const double newSpeed = speedOf(v, formed, v.size(), d);
    if (newSpeed > 0 && swarm.plus(newSpeed) > bestSpeed) {
        for (size_t j : formed)
            clusterOf[j] = k;
        return;
    }
    if (bestCluster >= 0)
        clusterOf[i] = bestCluster;
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

Replan planJoin(const std::vector<Capacity> &v, std::vector<int> clusterOf, size_t joined, const ModelDemand &d,
                const std::set<int> &closed)
{
    if (joined >= v.size() || clusterOf.size() != v.size())
        throw Error("re-plan: volunteer " + std::to_string(joined) + " is not in the plan");
    const std::vector<int> before = clusterOf;
    place(v, clusterOf, joined, d, closed);
    Replan r{evaluate(v, clusterOf, d), movedBetween(before, clusterOf, joined)};
    // Waiting volunteers that now joined a new cluster with the newcomer count as moved
    // from "waiting": that is the point of waiting, so they are not reported.
    r.moved.erase(std::remove_if(r.moved.begin(), r.moved.end(), [&](size_t i) { return before[i] == -1; }),
                  r.moved.end());
    return r;
}

} // namespace rookery::swarm
