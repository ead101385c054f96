// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/swarm_planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "engine/common/error.h"

namespace rookery::swarm {
namespace {

model::StageDevice deviceOf(const PlanVolunteer &v)
{
    return {v.id, v.capacity.gflops, uint64_t(v.capacity.memoryBytes), v.capacity.bandwidthBytesPerSecond};
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
    std::string lastError;
    auto consider = [&](const std::vector<size_t> &candidate) {
        std::vector<model::StageDevice> devices;
        for (size_t i : candidate)
            devices.push_back(deviceOf(v[i]));
        try {
            auto p = model::partitionLayers(costs, devices, options);
            if (p.bottleneckSeconds() < bestSeconds) {
                bestSeconds = p.bottleneckSeconds();
                best = {candidate, std::move(p), 0};
            }
        } catch (const Error &e) {
            lastError = e.what();
        }
    };
    if (order.size() <= 6) {
        std::vector<size_t> perm = order;
        std::sort(perm.begin(), perm.end());
        do
            consider(perm);
        while (std::next_permutation(perm.begin(), perm.end()));
    } else {
        consider(order);
    }
    if (best.stages.empty())
        throw Error("cannot cut the model for this cluster: " + lastError);
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

SwarmPlan planSwarm(const PlanModel &m, const std::vector<PlanVolunteer> &v, const FormationOptions &options)
{
    std::vector<Capacity> capacities;
    for (const auto &x : v)
        capacities.push_back(x.capacity);
    return completePlan(m, v, formClusters(capacities, demandOf(m), options));
}

} // namespace rookery::swarm
