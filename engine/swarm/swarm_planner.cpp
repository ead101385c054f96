// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/swarm_planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "engine/common/error.h"

namespace rookery::swarm {
namespace {

model::StageDevice deviceOf(const PlanVolunteer &v)
{
    return {v.id, v.capacity.gflops, uint64_t(v.capacity.memoryBytes), v.capacity.bandwidthBytesPerSecond};
}

// Every order of `members` that differs in what a stage gets, in the order a search
// over all their permutations (from the smallest ids) meets them first. Members alike
// (the same capacity and reachability, and no measured links between members) are
// interchangeable: an order that only swaps them cuts the same, so it is left out. Six
// members have 720 orders; a swarm of identical machines has one.
std::vector<std::vector<size_t>> distinctOrders(const std::vector<PlanVolunteer> &v, std::vector<size_t> members)
{
    std::sort(members.begin(), members.end());
    // Measured links between members tell them apart: who is next to whom matters.
    bool linksMeasured = false;
    for (size_t a : members)
        for (size_t b : members)
            linksMeasured = linksMeasured || v[a].uploadTo.count(v[b].id) > 0;
    const auto alike = [&](size_t a, size_t b) {
        const auto &x = v[a].capacity, &y = v[b].capacity;
        return !linksMeasured && x.gflops == y.gflops && x.memoryBytes == y.memoryBytes &&
               x.bandwidthBytesPerSecond == y.bandwidthBytesPerSecond && x.reachable == y.reachable;
    };
    std::vector<size_t> kindOf(members.size()); // the first member alike, by position
    for (size_t i = 0; i < members.size(); ++i) {
        kindOf[i] = i;
        for (size_t j = 0; j < i; ++j)
            if (alike(members[j], members[i])) {
                kindOf[i] = j;
                break;
            }
    }
    std::vector<size_t> kinds = kindOf;
    std::sort(kinds.begin(), kinds.end());
    std::vector<std::vector<size_t>> orders;
    do { // each arrangement of kinds once; its members alike take their places in id order
        std::vector<size_t> order, taken(members.size(), 0);
        for (size_t kind : kinds) {
            size_t k = 0;
            for (size_t i = 0; i < members.size(); ++i)
                if (kindOf[i] == kind && k++ == taken[kind]) {
                    order.push_back(members[i]);
                    break;
                }
            ++taken[kind];
        }
        orders.push_back(std::move(order));
    } while (std::next_permutation(kinds.begin(), kinds.end()));
    std::sort(orders.begin(), orders.end()); // a full search's order: each is its kind's smallest
    return orders;
}

std::vector<RingPlan> ringsFor(const std::vector<PipelinePlan> &pipelines, const model::ModelSpec &spec)
{
    // Every cut of every cluster splits the layers into segments; each segment with
    // parameters gets a ring of its holders.
    std::set<size_t> bounds = {0, spec.layers.size()};
    for (const auto &p : pipelines)
        for (size_t c : p.partition.cuts())
            bounds.insert(c);
    const auto costs = model::layerCosts(spec, 1);
    std::vector<RingPlan> rings;
    for (auto it = bounds.begin(); std::next(it) != bounds.end(); ++it) {
        const size_t first = *it, last = *std::next(it);
        int64_t params = 0;
        for (size_t l = first; l < last; ++l)
            params += costs[l].parameters;
        if (params == 0)
            continue;
        RingPlan ring{(uint64_t(first) << 32) | uint64_t(last), first, last, {}};
        for (const auto &p : pipelines)
            for (size_t s = 0; s < p.stages.size(); ++s) {
                const auto &st = p.partition.stages[s];
                if (st.firstLayer <= first && last <= st.lastLayer)
                    ring.members.push_back(p.stages[s]);
            }
        if (!ring.members.empty())
            rings.push_back(std::move(ring));
    }
    return rings;
}

} // namespace

ModelDemand demandOf(const PlanModel &m)
{
    const auto costs = model::layerCosts(m.spec, m.microbatch);
    const auto options = model::partitionOptionsFor(m.spec, m.microbatch, m.optimizerStateCopies);
    // Cut into a pipeline, the model needs more memory than on one device: every stage
    // but the leaf stashes a weight version and activations per microbatch in flight.
    // The demand is the most that pipelines of one to three equal stages need in total,
    // plus a tenth for cuts that do not divide evenly; completePlan() still checks each
    // real cut against its devices.
    const model::StageDevice unbounded{"any", 1, std::numeric_limits<uint64_t>::max() / 8,
                                       std::numeric_limits<double>::infinity()};
    ModelDemand d;
    for (size_t stages = 1; stages <= std::min<size_t>(3, costs.size()); ++stages) {
        const auto p = model::partitionLayers(costs, std::vector<model::StageDevice>(stages, unbounded), options);
        uint64_t total = 0;
        for (const auto &s : p.stages)
            total += s.memoryBytes;
        d.memoryBytes = std::max(d.memoryBytes, int64_t(double(total) * 1.1));
    }
    for (size_t i = 0; i < costs.size(); ++i)
        d.trainFlopsPerSample += model::trainingFlops(costs, i) / double(m.microbatch);
    double activation = 0;
    for (const auto &c : costs)
        activation += double(c.activationBytes);
    d.boundaryBytesPerSample = activation / double(costs.size()) / double(m.microbatch);
    d.maxStages = int(std::min<size_t>(costs.size(), 8));
    return d;
}

namespace {

// What stage `s` of `order` uploads at: the slower of its links to its neighbours, each
// the measured figure where there is one, else the volunteer's own bandwidth.
double stageUpload(const std::vector<PlanVolunteer> &v, const std::vector<size_t> &order, size_t s)
{
    const PlanVolunteer &self = v[order[s]];
    if (order.size() < 2)
        return self.capacity.bandwidthBytesPerSecond;
    double slowest = std::numeric_limits<double>::infinity();
    for (const size_t n : {s - 1, s + 1}) {
        if (n >= order.size()) // s - 1 wraps around at the root
            continue;
        const auto it = self.uploadTo.find(v[order[n]].id);
        slowest = std::min(
            slowest, it != self.uploadTo.end() && it->second > 0 ? it->second : self.capacity.bandwidthBytesPerSecond);
    }
    return slowest;
}

} // namespace

PipelinePlan planPipeline(const PlanModel &m, const std::vector<PlanVolunteer> &v, const std::vector<size_t> &members)
{
    if (members.empty())
        throw Error("cannot plan a pipeline without members");
    const auto costs = model::layerCosts(m.spec, m.microbatch);
    const auto options = model::partitionOptionsFor(m.spec, m.microbatch, m.optimizerStateCopies);
    std::vector<size_t> order = members;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return v[a].capacity.gflops > v[b].capacity.gflops; });
    PipelinePlan best;
    double bestSeconds = std::numeric_limits<double>::infinity();
    size_t bestRelayed = 0;
    std::vector<model::StageDevice> lastDevices; // to say why, when no order fits
    auto consider = [&](const std::vector<size_t> &candidate) {
        const auto relayed = [&](size_t s) { // the link from stage s to s + 1
            return s + 1 < candidate.size() && !v[candidate[s]].capacity.reachable &&
                   !v[candidate[s + 1]].capacity.reachable;
        };
        std::vector<model::StageDevice> devices;
        size_t relayedLinks = 0;
        for (size_t s = 0; s < candidate.size(); ++s) {
            model::StageDevice d = deviceOf(v[candidate[s]]);
            d.linkBytesPerSecond = stageUpload(v, candidate, s);
            if (m.relayBytesPerSecond > 0 && (relayed(s) || (s > 0 && relayed(s - 1))))
                d.linkBytesPerSecond = std::min(d.linkBytesPerSecond, m.relayBytesPerSecond);
            relayedLinks += relayed(s);
            devices.push_back(d);
        }
        std::optional<model::Partition> p;
        try {
            p = model::tryPartitionLayers(costs, devices, options);
        } catch (const Error &) { // figures no cut can use: said below if no order fits
        }
        if (!p) {
            lastDevices = std::move(devices);
            return;
        }
        const double seconds = p->bottleneckSeconds();
        const bool faster = seconds < bestSeconds * (1 - 1e-9);
        const bool asFast = seconds <= bestSeconds * (1 + 1e-9);
        if (faster || (asFast && relayedLinks < bestRelayed)) {
            bestSeconds = seconds;
            bestRelayed = relayedLinks;
            best = {candidate, std::move(*p), 0};
        }
    };
    if (order.size() <= 6)
        for (const auto &candidate : distinctOrders(v, order))
            consider(candidate);
    else
        consider(order);
    if (best.stages.empty()) {
        try {
            model::partitionLayers(costs, lastDevices, options);
        } catch (const Error &e) {
            throw Error(std::string("cannot cut the model for this cluster: ") + e.what());
        }
        throw Error("cannot cut the model for this cluster");
    }
    best.samplesPerSecond = double(m.microbatch) / bestSeconds;
    return best;
}

SwarmPlan completePlan(const PlanModel &m, const std::vector<PlanVolunteer> &v, Clustering clustering,
                       const SwarmPlan *previous, const std::vector<int> &changed)
{
    SwarmPlan plan;
    const int k = clustering.clusterCount();
    std::vector<std::vector<size_t>> members(static_cast<size_t>(k));
    for (size_t i = 0; i < clustering.clusterOf.size(); ++i)
        if (clustering.clusterOf[i] >= 0)
            members[size_t(clustering.clusterOf[i])].push_back(i);
    plan.pipelines.resize(size_t(k));
    double slowest = std::numeric_limits<double>::infinity();
    int working = 0;
    for (int c = 0; c < k; ++c) {
        if (members[size_t(c)].empty())
            continue;
        const bool keep = previous && size_t(c) < previous->pipelines.size() &&
                          std::find(changed.begin(), changed.end(), c) == changed.end() &&
                          !previous->pipelines[size_t(c)].stages.empty();
        if (keep) {
            plan.pipelines[size_t(c)] = previous->pipelines[size_t(c)];
        } else if (clustering.clusterFeasible[size_t(c)]) {
            try {
                plan.pipelines[size_t(c)] = planPipeline(m, v, members[size_t(c)]);
            } catch (const Error &) {
                clustering.clusterFeasible[size_t(c)] = false; // no cut fits: it waits for members
                continue;
            }
        } else {
            continue; // a cluster that cannot hold the model waits for members
        }
        slowest = std::min(slowest, plan.pipelines[size_t(c)].samplesPerSecond);
        ++working;
    }
    if (working == 0)
        throw Error("no cluster can hold the model: add volunteers or memory");
    plan.clustering = std::move(clustering);
    plan.predictedSamplesPerSecond = working * slowest;
    plan.rings = ringsFor(plan.pipelines, m.spec);
    return plan;
}

namespace {

// The real speed of a cluster: its best pipeline, cut once per member set. Zero when it
// cannot hold the model, by the search's measure or by the partitioner's.
class PipelineSpeeds
{
public:
    PipelineSpeeds(const PlanModel &m, const std::vector<PlanVolunteer> &v, const ModelDemand &d)
        : m_model(m)
        , m_volunteers(v)
        , m_demand(d)
    { }

    double operator()(std::vector<size_t> members)
    {
        if (members.empty())
            return 0;
        std::sort(members.begin(), members.end());
        if (const auto it = m_memo.find(members); it != m_memo.end())
            return it->second;
        std::vector<Capacity> caps;
        for (size_t i : members)
            caps.push_back(m_volunteers[i].capacity);
        double speed = 0;
        if (clusterSpeed(caps, m_demand) > 0) { // completePlan only cuts what the search calls feasible
            try {
                speed = planPipeline(m_model, m_volunteers, members).samplesPerSecond;
            } catch (const Error &) { }
        }
        m_memo.emplace(std::move(members), speed);
        return speed;
    }

private:
    const PlanModel &m_model;
    const std::vector<PlanVolunteer> &m_volunteers;
    const ModelDemand &m_demand;
    std::map<std::vector<size_t>, double> m_memo;
};

// The swarm's speed (working clusters x the slowest), and how many clusters share that
// slowest speed: with volunteers of few kinds many clusters tie, and raising one of
// them is progress even though the speed moves only once the last one is raised.
struct SwarmScore
{
    double speed = 0;
    int atSlowest = 0;
    bool betterThan(const SwarmScore &o) const
    {
        return speed > o.speed * (1 + 1e-9) || (speed >= o.speed * (1 - 1e-9) && atSlowest < o.atSlowest);
    }
};

SwarmScore scoreOf(const std::vector<double> &speeds)
{
    double slowest = std::numeric_limits<double>::infinity();
    int working = 0;
    for (double s : speeds)
        if (s > 0) {
            ++working;
            slowest = std::min(slowest, s);
        }
    SwarmScore score{working ? working * slowest : 0, 0};
    for (double s : speeds)
        score.atSlowest += s > 0 && s <= slowest * (1 + 1e-9);
    return score;
}

// The genetic search scores clusters with a closed-form estimate, and the pipelines the
// partitioner then cuts can run far from it: a slow uplink costs nothing on a last stage
// that sends no gradient back, and a cluster with the memory in total may have no cut
// that fits its members. So after the search, this moves and swaps members between the
// slowest working cluster and the fastest (or idle) others, scored by the real cuts,
// while the swarm's speed (clusters x slowest) rises, or fewer clusters share the slowest.
// With `keepSizes` (the operator fixed the cluster size) it only swaps: on fast links a
// move could leave one volunteer alone and put three in the other cluster, where the
// operator asked for two and two.
std::vector<int> balanceWithPipelines(const PlanModel &m, const std::vector<PlanVolunteer> &v, const ModelDemand &d,
                                      std::vector<int> clusterOf, bool keepSizes)
{
    PipelineSpeeds speedOf(m, v, d);
    auto members = membersByCluster(clusterOf);
    const int k = int(members.size());
    std::vector<double> speed(static_cast<size_t>(k));
    for (int c = 0; c < k; ++c)
        speed[size_t(c)] = speedOf(members[size_t(c)]);
    // A cluster with no cut that fits sheds the member whose leaving lets the others
    // work; the shed wait (in a pool the balancing below may draw on).
    members.emplace_back();
    speed.push_back(0);
    const size_t pool = size_t(k);
    for (size_t c = 0; c < pool; ++c)
        while (speed[c] == 0 && members[c].size() > 1) {
            size_t shed = members[c].size();
            double best = 0;
            for (size_t a = 0; a < members[c].size(); ++a) {
                auto rest = members[c];
                rest.erase(rest.begin() + long(a));
                if (const double s = speedOf(rest); s > best) {
                    best = s;
                    shed = a;
                }
            }
            if (shed == members[c].size())
                break;
            members[pool].push_back(members[c][shed]);
            members[c].erase(members[c].begin() + long(shed));
            speed[c] = best;
        }
    for (int round = 0; round < std::min(4 * k, 400); ++round) {
        int slow = -1;
        for (int c = 0; c < k; ++c) // the pool (k) is never a cluster to raise
            if (speed[size_t(c)] > 0 && (slow < 0 || speed[size_t(c)] < speed[size_t(slow)]))
                slow = c;
        if (slow < 0)
            break;
        // Donors: idle clusters first (their members are spare), then the fastest.
        std::vector<int> donors;
        for (int c = 0; c <= k; ++c)
            if (c != slow && !members[size_t(c)].empty())
                donors.push_back(c);
        std::stable_sort(donors.begin(), donors.end(), [&](int a, int b) {
            const double sa = speed[size_t(a)], sb = speed[size_t(b)];
            return (sa == 0) != (sb == 0) ? sa == 0 : sa > sb;
        });
        donors.resize(std::min<size_t>(donors.size(), 8));
        SwarmScore best = scoreOf(speed);
        int bestDonor = -1;
        std::vector<size_t> bestSlow, bestDonorMembers;
        const auto &ms = members[size_t(slow)];
        for (int donor : donors) {
            const auto &md = members[size_t(donor)];
            auto consider = [&](std::vector<size_t> ns, std::vector<size_t> nd) {
                const double s = speedOf(ns), t = size_t(donor) == pool ? 0 : speedOf(nd);
                if (s <= 0 || (speed[size_t(donor)] > 0 && !nd.empty() && t <= 0))
                    return; // never break a working cluster
                auto trial = speed;
                trial[size_t(slow)] = s;
                trial[size_t(donor)] = t;
                if (const SwarmScore score = scoreOf(trial); score.betterThan(best)) {
                    best = score;
                    bestDonor = donor;
                    bestSlow = std::move(ns);
                    bestDonorMembers = std::move(nd);
                }
            };
            for (size_t a = 0; a < md.size(); ++a) {
                if (!keepSizes && int(ms.size()) < d.maxStages) {
                    auto ns = ms, nd = md;
                    ns.push_back(md[a]);
                    nd.erase(nd.begin() + long(a));
                    consider(std::move(ns), std::move(nd));
                }
                for (size_t b = 0; b < ms.size(); ++b) {
                    auto ns = ms, nd = md;
                    std::swap(ns[b], nd[a]);
                    consider(std::move(ns), std::move(nd));
                }
            }
        }
        if (bestDonor < 0)
            break;
        members[size_t(slow)] = std::move(bestSlow);
        members[size_t(bestDonor)] = std::move(bestDonorMembers);
        speed[size_t(slow)] = speedOf(members[size_t(slow)]);
        speed[size_t(bestDonor)] = size_t(bestDonor) == pool ? 0 : speedOf(members[size_t(bestDonor)]);
    }
    for (int c = 0; c < k; ++c)
        for (size_t i : members[size_t(c)])
            clusterOf[i] = c;
    for (size_t i : members[pool])
        clusterOf[i] = -1;
    return clusterOf;
}

} // namespace

SwarmPlan planSwarm(const PlanModel &m, const std::vector<PlanVolunteer> &v, const FormationOptions &options)
{
    std::vector<Capacity> capacities;
    for (const auto &x : v)
        capacities.push_back(x.capacity);
    const ModelDemand demand = demandOf(m);
    const Clustering searched = formClusters(capacities, demand, options);
    return completePlan(
        m, v,
        evaluate(capacities, balanceWithPipelines(m, v, demand, searched.clusterOf, options.clusterSize > 0), demand));
}

} // namespace rookery::swarm
