// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/cluster_formation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/common/error.h"
#include "engine/common/splitmix64.h"

namespace rookery::swarm {
namespace {

// Reproducible on every platform. below() keeps the plain modulo this planner has
// always used (a bias of n / 2^64), so a seed still gives the plans it gave before.
struct Rng : SplitMix64
{
    int below(int n) { return int(next() % uint64_t(n)); }
};

struct ClusterSums
{
    double gflops = 0;
    int64_t memory = 0;
    double minBandwidth = std::numeric_limits<double>::infinity();
    int members = 0;
};

double speedOf(const ClusterSums &c, const ModelDemand &d)
{
    if (c.members == 0 || c.memory < d.memoryBytes || c.members > d.maxStages)
        return 0;
    const double compute = d.trainFlopsPerSample / (c.gflops * 1e9);
    // Each boundary ships activations forward and gradients back over the slowest link.
    const double comms = c.members > 1 ? 2 * d.boundaryBytesPerSample / c.minBandwidth : 0;
    return 1.0 / std::max(compute, comms);
}

// Higher is better. Swarm speed, minus a penalty that steers away from clusters that
// cannot hold the model (so the search can cross infeasible ground), minus a small
// term for imbalance that breaks ties toward even clusters.
double fitness(const std::vector<Capacity> &v, const std::vector<int> &genes, int k, const ModelDemand &d,
               double referenceSpeed)
{
    std::vector<ClusterSums> sums(static_cast<size_t>(k));
    for (size_t i = 0; i < genes.size(); ++i) {
        auto &c = sums[size_t(genes[i])];
        c.gflops += v[i].gflops;
        c.memory += v[i].memoryBytes;
        c.minBandwidth = std::min(c.minBandwidth, v[i].bandwidthBytesPerSecond);
        ++c.members;
    }
    double minSpeed = std::numeric_limits<double>::infinity(), penalty = 0, sum = 0, sumSq = 0;
    int feasible = 0;
    for (const auto &c : sums) {
        if (c.members == 0)
            continue;
        const double s = speedOf(c, d);
        if (s > 0) {
            ++feasible;
            minSpeed = std::min(minSpeed, s);
            sum += s;
            sumSq += s * s;
        } else {
            const double memShort = std::max(0.0, double(d.memoryBytes - c.memory)) / double(d.memoryBytes);
            const double tooMany = std::max(0, c.members - d.maxStages);
            penalty += (1 + memShort + tooMany) * referenceSpeed;
        }
    }
    if (feasible == 0)
        return -penalty;
    const double mean = sum / feasible;
    const double stddev = std::sqrt(std::max(0.0, sumSq / feasible - mean * mean));
    return feasible * minSpeed - penalty - 0.01 * stddev;
}

// Volunteers sorted by speed, dealt snake-wise into k clusters: a balanced start.
std::vector<int> snakeDeal(const std::vector<Capacity> &v, int k)
{
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a].gflops > v[b].gflops; });
    std::vector<int> genes(v.size());
    for (size_t i = 0; i < order.size(); ++i) {
        const int round = int(i / size_t(k)), pos = int(i % size_t(k));
        genes[order[i]] = round % 2 == 0 ? pos : k - 1 - pos;
    }
    return genes;
}

// Renumbers clusters 0..k-1 in order of first appearance, dropping empty ones.
int compact(std::vector<int> &genes)
{
    std::vector<int> map;
    int next = 0;
    for (auto &g : genes) {
        if (g < 0)
            continue;
        if (size_t(g) >= map.size())
            map.resize(size_t(g) + 1, -1);
        if (map[size_t(g)] < 0)
            map[size_t(g)] = next++;
        g = map[size_t(g)];
    }
    return next;
}

// Moves and swaps between the slowest cluster and faster ones while that raises the
// swarm's speed. The genetic search finds the shape; this polishes the balance, which
// the search alone leaves rough because only the slowest cluster counts. Moves that
// would leave a cluster unable to hold the model are never taken.
void balance(const std::vector<Capacity> &v, std::vector<int> &genes, const ModelDemand &d)
{
    const int k = compact(genes);
    std::vector<std::vector<size_t>> members(static_cast<size_t>(k));
    for (size_t i = 0; i < genes.size(); ++i)
        members[size_t(genes[i])].push_back(i);
    auto speedOfMembers = [&](const std::vector<size_t> &m) {
        ClusterSums c;
        for (size_t i : m) {
            c.gflops += v[i].gflops;
            c.memory += v[i].memoryBytes;
            c.minBandwidth = std::min(c.minBandwidth, v[i].bandwidthBytesPerSecond);
            ++c.members;
        }
        return speedOf(c, d);
    };
    std::vector<double> speed(static_cast<size_t>(k));
    for (int c = 0; c < k; ++c)
        speed[size_t(c)] = speedOfMembers(members[size_t(c)]);
    const int maxIterations = std::min(4 * int(v.size()), 400);
    for (int iteration = 0; iteration < maxIterations; ++iteration) {
        // The three slowest feasible clusters: enough to know the minimum after
        // changing any two of them.
        std::vector<size_t> order;
        for (size_t c = 0; c < speed.size(); ++c)
            if (speed[c] > 0)
                order.push_back(c);
        if (order.size() < 2)
            return;
        std::partial_sort(order.begin(), order.begin() + std::min<long>(3, long(order.size())), order.end(),
                          [&](size_t a, size_t b) { return speed[a] < speed[b]; });
        const size_t slow = order[0];
        auto minWith = [&](size_t donor, double newSlow, double newDonor) {
            double lo = std::min(newSlow, newDonor);
            for (size_t j = 0; j < std::min<size_t>(3, order.size()); ++j)
                if (order[j] != slow && order[j] != donor) {
                    lo = std::min(lo, speed[order[j]]);
                    break;
                }
            return lo;
        };
        // Donors: the fastest clusters, at most 64 of them.
        std::vector<size_t> donors(order.begin() + 1, order.end());
        std::sort(donors.begin(), donors.end(), [&](size_t a, size_t b) { return speed[a] > speed[b]; });
        donors.resize(std::min<size_t>(donors.size(), 64));
        double best = speed[slow] * (1 + 1e-9);
        size_t bestDonor = 0;
        std::vector<size_t> bestSlow, bestFast;
        auto &ms = members[slow];
        for (size_t donor : donors) {
            auto &mf = members[donor];
            for (size_t a = 0; a < mf.size(); ++a) {
                auto consider = [&](std::vector<size_t> ns, std::vector<size_t> nf) {
                    const double s = speedOfMembers(ns), f = speedOfMembers(nf);
                    if (s <= 0 || f <= 0)
                        return; // never break a cluster
                    const double lo = minWith(donor, s, f);
                    if (lo > best) {
                        best = lo;
                        bestDonor = donor;
                        bestSlow = std::move(ns);
                        bestFast = std::move(nf);
                    }
                };
                if (int(ms.size()) < d.maxStages && mf.size() > 1) { // move a into the slow cluster
                    auto ns = ms, nf = mf;
                    ns.push_back(mf[a]);
                    nf.erase(nf.begin() + long(a));
                    consider(std::move(ns), std::move(nf));
                }
                for (size_t b = 0; b < ms.size(); ++b) // swap a and b
                    if (v[mf[a]].gflops > v[ms[b]].gflops) {
                        auto ns = ms, nf = mf;
                        std::swap(ns[b], nf[a]);
                        consider(std::move(ns), std::move(nf));
                    }
            }
        }
        if (bestSlow.empty())
            return;
        ms = std::move(bestSlow);
        members[bestDonor] = std::move(bestFast);
        speed[slow] = speedOfMembers(ms);
        speed[bestDonor] = speedOfMembers(members[bestDonor]);
        for (size_t i : ms)
            genes[i] = int(slow);
        for (size_t i : members[bestDonor])
            genes[i] = int(bestDonor);
    }
}

} // namespace

double Clustering::imbalance() const
{
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (size_t i = 0; i < clusterSpeed.size(); ++i)
        if (clusterFeasible[i]) {
            lo = std::min(lo, clusterSpeed[i]);
            hi = std::max(hi, clusterSpeed[i]);
        }
    return hi > 0 ? hi / lo : std::numeric_limits<double>::infinity();
}

double clusterSpeed(const std::vector<Capacity> &members, const ModelDemand &demand)
{
    ClusterSums c;
    for (const auto &m : members) {
        c.gflops += m.gflops;
        c.memory += m.memoryBytes;
        c.minBandwidth = std::min(c.minBandwidth, m.bandwidthBytesPerSecond);
        ++c.members;
    }
    return speedOf(c, demand);
}

std::vector<std::vector<size_t>> membersByCluster(const std::vector<int> &clusterOf)
{
    int k = 0;
    for (int c : clusterOf)
        k = std::max(k, c + 1);
    std::vector<std::vector<size_t>> members(static_cast<size_t>(k));
    for (size_t i = 0; i < clusterOf.size(); ++i)
        if (clusterOf[i] >= 0)
            members[size_t(clusterOf[i])].push_back(i);
    return members;
}

Clustering evaluate(const std::vector<Capacity> &volunteers, std::vector<int> clusterOf, const ModelDemand &demand)
{
    Clustering out;
    int k = 0;
    for (int c : clusterOf)
        k = std::max(k, c + 1);
    std::vector<std::vector<Capacity>> members(static_cast<size_t>(k));
    for (size_t i = 0; i < clusterOf.size(); ++i)
        if (clusterOf[i] >= 0)
            members[size_t(clusterOf[i])].push_back(volunteers[i]);
    double minSpeed = std::numeric_limits<double>::infinity();
    int feasible = 0;
    for (const auto &m : members) {
        const double s = clusterSpeed(m, demand);
        out.clusterSpeed.push_back(s);
        out.clusterFeasible.push_back(s > 0);
        if (s > 0) {
            ++feasible;
            minSpeed = std::min(minSpeed, s);
        }
    }
    out.swarmSpeed = feasible ? feasible * minSpeed : 0;
    out.clusterOf = std::move(clusterOf);
    return out;
}

namespace {

// Deals volunteers, fastest first, back and forth over the clusters, so every cluster
// gets a similar mix of fast and slow machines.
Clustering fixedSizeClusters(const std::vector<Capacity> &v, int size, const ModelDemand &d)
{
    const int k = std::max(1, int(v.size()) / size);
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a].gflops > v[b].gflops; });
    std::vector<int> genes(v.size());
    for (size_t i = 0; i < order.size(); ++i) {
        const int round = int(i) / k, slot = int(i) % k;
        genes[order[i]] = round % 2 == 0 ? slot : k - 1 - slot;
    }
    return evaluate(v, genes, d);
}

} // namespace

Clustering formClusters(const std::vector<Capacity> &v, const ModelDemand &d, const FormationOptions &o)
{
    if (v.empty())
        throw Error("cannot form clusters: no volunteers");
    if (d.memoryBytes <= 0 || d.trainFlopsPerSample <= 0 || d.maxStages < 1)
        throw Error("cannot form clusters: the model's demand is not set");
    for (const auto &c : v)
        if (!(c.gflops > 0) || c.memoryBytes <= 0 || !(c.bandwidthBytesPerSecond > 0))
            throw Error("cannot form clusters: a volunteer has no measured capacity");
    int64_t totalMemory = 0;
    for (const auto &c : v)
        totalMemory += c.memoryBytes;
    const int kMax = int(std::clamp<int64_t>(
        std::max<int64_t>(totalMemory / d.memoryBytes, (int64_t(v.size()) + d.maxStages - 1) / d.maxStages), 1,
        int64_t(v.size())));
    if (o.clusterSize > 0)
        return fixedSizeClusters(v, o.clusterSize, d);
    const double reference =
        clusterSpeed(v, {d.memoryBytes, d.trainFlopsPerSample, d.boundaryBytesPerSample, int(v.size())});
    Rng rng{o.seed};

    // The population: balanced deals for a spread of cluster counts, then random ones.
    struct Individual
    {
        std::vector<int> genes;
        int k;
        double score;
    };
    std::vector<Individual> pop;
    auto add = [&](std::vector<int> genes) {
        const int k = compact(genes);
        const double s = fitness(v, genes, k, d, reference);
        pop.push_back({std::move(genes), k, s});
    };
    const int population = std::max(8, o.population);
    for (int i = 0; i < population / 2; ++i)
        add(snakeDeal(v, std::max(1, kMax - i * std::max(1, kMax / (population / 2)))));
    while (int(pop.size()) < population) {
        const int k = 1 + rng.below(kMax);
        std::vector<int> genes(v.size());
        for (auto &g : genes)
            g = rng.below(k);
        add(std::move(genes));
    }

    auto pick = [&]() -> const Individual & { // tournament of three
        const Individual *best = &pop[size_t(rng.below(int(pop.size())))];
        for (int i = 0; i < 2; ++i) {
            const Individual &c = pop[size_t(rng.below(int(pop.size())))];
            if (c.score > best->score)
                best = &c;
        }
        return *best;
    };
    for (int gen = 0; gen < o.generations; ++gen) {
        std::sort(pop.begin(), pop.end(), [](const auto &a, const auto &b) { return a.score > b.score; });
        std::vector<Individual> next(pop.begin(), pop.begin() + 2); // elitism
        while (int(next.size()) < population) {
            const Individual &a = pick(), &b = pick();
            std::vector<int> child = a.genes;
            if (a.k == b.k && rng.unit() < 0.7) // uniform crossover between like-shaped parents
                for (size_t i = 0; i < child.size(); ++i)
                    if (rng.next() & 1)
                        child[i] = b.genes[i];
            const int k = a.k;
            const int mutations = 1 + rng.below(std::max(1, int(v.size()) / 50 + 1));
            for (int m = 0; m < mutations; ++m) {
                const double r = rng.unit();
                const size_t i = size_t(rng.below(int(v.size())));
                if (r < 0.45) { // move one volunteer
                    child[i] = rng.below(std::min(kMax, k + 1));
                } else if (r < 0.9) { // swap two volunteers
                    std::swap(child[i], child[size_t(rng.below(int(v.size())))]);
                } else if (k > 1) { // dissolve a cluster into the others
                    const int gone = rng.below(k);
                    for (auto &g : child)
                        if (g == gone)
                            g = (gone + 1 + rng.below(k - 1)) % k;
                }
            }
            const int ck = compact(child);
            const double s = fitness(v, child, ck, d, reference);
            next.push_back({std::move(child), ck, s});
        }
        pop = std::move(next);
    }
    const auto best =
        std::max_element(pop.begin(), pop.end(), [](const auto &a, const auto &b) { return a.score < b.score; });
    std::vector<int> genes = best->genes;
    balance(v, genes, d);
    Clustering out = evaluate(v, std::move(genes), d);
    if (out.swarmSpeed <= 0)
        throw Error("cannot form any cluster: the volunteers together have " + std::to_string(totalMemory >> 20) +
                    " MiB, the model needs " + std::to_string(d.memoryBytes >> 20) + " MiB per cluster");
    return out;
}

Clustering randomClustering(const std::vector<Capacity> &v, int clusters, const ModelDemand &d, uint64_t seed)
{
    Rng rng{seed};
    std::vector<int> genes(v.size());
    for (size_t i = 0; i < genes.size(); ++i)
        genes[i] = int(i % size_t(clusters));
    for (size_t i = genes.size(); i > 1; --i)
        std::swap(genes[i - 1], genes[size_t(rng.below(int(i)))]);
    return evaluate(v, genes, d);
}

} // namespace rookery::swarm
