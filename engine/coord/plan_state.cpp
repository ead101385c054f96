// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/plan_state.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/swarm/replan.h"

namespace rookery::coord {
namespace {

using nlohmann::json;

void insertClusters(std::set<int> &into, const std::vector<int> &before, const std::vector<int> &after,
                    const std::vector<size_t> &moved)
{
    for (size_t i : moved) {
        if (i < before.size() && before[i] >= 0)
            into.insert(before[i]);
        if (i < after.size() && after[i] >= 0)
            into.insert(after[i]);
    }
}

std::string waitingReason(bool hasPlan, int cluster)
{
    if (!hasPlan)
        return "waiting: the volunteers cannot hold the model yet, or the first plan is still to come";
    if (cluster < 0)
        return "waiting: in no cluster (none has room, and the waiting volunteers cannot hold the model together)";
    return "waiting: cluster " + std::to_string(cluster) + " cannot hold the model yet";
}

} // namespace

PlanState::PlanState(swarm::PlanModel model, swarm::FormationOptions options)
    : m_model(std::move(model))
    , m_options(options)
    , m_demand(swarm::demandOf(m_model))
{ }

bool PlanState::contains(const std::string &nodeId) const { return indexOf(nodeId) < m_ids.size(); }

size_t PlanState::indexOf(const std::string &nodeId) const
{
    return size_t(std::find(m_ids.begin(), m_ids.end(), nodeId) - m_ids.begin());
}

bool PlanState::canHoldModel() const
{
    std::vector<int64_t> memory;
    for (const auto &c : m_capacities)
        memory.push_back(c.memoryBytes);
    const size_t n = std::min(memory.size(), size_t(std::max(1, m_demand.maxStages)));
    std::partial_sort(memory.begin(), memory.begin() + long(n), memory.end(), std::greater<>());
    int64_t total = 0;
    for (size_t i = 0; i < n; ++i)
        total += memory[i];
    return n > 0 && total >= m_demand.memoryBytes;
}

std::vector<swarm::PlanVolunteer> PlanState::volunteers() const
{
    std::vector<swarm::PlanVolunteer> v;
    v.reserve(m_ids.size());
    for (size_t i = 0; i < m_ids.size(); ++i) {
        const auto links = m_uploadTo.find(m_ids[i]);
        v.push_back(
            {m_ids[i], m_capacities[i], links != m_uploadTo.end() ? links->second : std::map<std::string, double>{}});
    }
    return v;
}

void PlanState::setMeasuredLinks(const std::string &nodeId, std::map<std::string, double> uploadTo)
{
    if (uploadTo.empty())
        m_uploadTo.erase(nodeId);
    else
        m_uploadTo[nodeId] = std::move(uploadTo);
}

// Drops volunteer `index` and renumbers the plan's references to those after it. A
// pipeline that held it belongs to a changed cluster and is re-cut anyway.
void PlanState::erase(size_t index)
{
    m_uploadTo.erase(m_ids[index]);
    m_offerScale.erase(m_ids[index]);
    m_ids.erase(m_ids.begin() + long(index));
    m_capacities.erase(m_capacities.begin() + long(index));
    m_clusterOf.erase(m_clusterOf.begin() + long(index));
    auto renumber = [index](std::vector<size_t> &list) {
        std::erase(list, index);
        for (auto &i : list)
            if (i > index)
                --i;
    };
    for (auto &p : m_plan.pipelines)
        renumber(p.stages);
    for (auto &r : m_plan.rings)
        renumber(r.members);
    if (index < m_plan.clustering.clusterOf.size())
        m_plan.clustering.clusterOf.erase(m_plan.clustering.clusterOf.begin() + long(index));
}

void PlanState::complete(const std::vector<int> &changed)
{
    auto clustering = swarm::evaluate(m_capacities, m_clusterOf, m_demand);
    try {
        m_plan = swarm::completePlan(m_model, volunteers(), clustering, &m_plan, changed);
    } catch (const Error &) {
        // No cluster can work now. Keep the clusters, without pipelines: a join may
        // complete one, or the coordinator plans afresh (isWorking() is false).
        m_plan.clustering = std::move(clustering);
        m_plan.pipelines.assign(size_t(m_plan.clustering.clusterCount()), {});
        m_plan.rings.clear();
        m_plan.predictedSamplesPerSecond = 0;
    }
}

bool PlanState::hasPipeline(size_t i) const
{
    const int cluster = m_clusterOf[i];
    return m_hasPlan && cluster >= 0 && size_t(cluster) < m_plan.pipelines.size() &&
           !m_plan.pipelines[size_t(cluster)].stages.empty();
}

PlanChange PlanState::recalibrate(const std::string &nodeId, double factor)
{
    const size_t i = indexOf(nodeId);
    if (i >= m_ids.size() || !hasPipeline(i) || !(factor > 0) || factor >= 1)
        return {};
    return rescaleCompute(nodeId, factor);
}

PlanChange PlanState::rescaleCompute(const std::string &nodeId, double factor)
{
    PlanChange change;
    const size_t i = indexOf(nodeId);
    if (i >= m_ids.size() || !(factor > 0) || !std::isfinite(factor) || factor == 1)
        return change;
    m_capacities[i].gflops *= factor;
    if (!hasPipeline(i))
        return change;
    const int cluster = m_clusterOf[i];
    const auto cutsBefore = m_plan.pipelines[size_t(cluster)].partition.cuts();
    const auto orderBefore = m_plan.pipelines[size_t(cluster)].stages;
    complete({cluster});
    const auto &now = m_plan.pipelines[size_t(cluster)];
    if (now.partition.cuts() != cutsBefore || now.stages != orderBefore)
        change.changedClusters = {cluster}; // else no cut suits it better: nothing moves
    return change;
}

PlanChange PlanState::setComputeOfferScale(const std::string &nodeId, double scale)
{
    if (indexOf(nodeId) >= m_ids.size() || !(scale > 0) || !std::isfinite(scale))
        return {};
    const auto it = m_offerScale.find(nodeId);
    const double applied = it != m_offerScale.end() ? it->second : 1.0;
    const double factor = scale / applied;
    if (factor < kOfferChange && factor > 1 / kOfferChange)
        return {};
    m_offerScale[nodeId] = scale;
    return rescaleCompute(nodeId, factor);
}

bool PlanState::isWorking() const
{
    return m_hasPlan && std::any_of(m_plan.pipelines.begin(), m_plan.pipelines.end(),
                                    [](const auto &p) { return !p.stages.empty(); });
}

PlanChange PlanState::apply(const std::vector<std::string> &leaves,
                            const std::vector<std::pair<std::string, swarm::Capacity>> &joins,
                            const std::set<std::string> &keepClustersOf, const std::set<std::string> &finished)
{
    PlanChange change;
    std::set<int> changed;
    std::set<std::string> moved;
    std::vector<std::string> arrivals; // joined or moved into a cluster, in order
    for (const auto &id : leaves) {
        const size_t i = indexOf(id);
        if (i >= m_ids.size())
            continue;
        if (m_hasPlan && m_clusterOf[i] >= 0) {
            if (const auto done = finishedMatesOf(i, finished)) {
                changed.insert(m_clusterOf[i]);
                std::vector<size_t> out = *done;
                out.push_back(i);
                std::sort(out.rbegin(), out.rend()); // erase() renumbers those after it
                for (size_t j : out) {
                    moved.erase(m_ids[j]);
                    erase(j);
                }
                continue;
            }
            const auto before = m_clusterOf;
            auto r = swarm::planLeave(m_capacities, m_clusterOf, i, m_demand);
            m_clusterOf = std::move(r.clustering.clusterOf);
            changed.insert(before[i]);
            insertClusters(changed, before, m_clusterOf, r.moved);
            for (size_t j : r.moved) {
                moved.insert(m_ids[j]);
                if (m_clusterOf[j] >= 0)
                    arrivals.push_back(m_ids[j]);
            }
        }
        moved.erase(id);
        erase(i);
    }
    std::set<int> closed;
    if (!keepClustersOf.empty())
        for (size_t i = 0; i < m_ids.size(); ++i)
            if (m_clusterOf[i] >= 0 && keepClustersOf.count(m_ids[i]))
                closed.insert(m_clusterOf[i]);
    for (const auto &[id, capacity] : joins) {
        m_offerScale.erase(id); // its capacity is what it registered with, from now
        if (const size_t i = indexOf(id); i < m_ids.size()) {
            m_capacities[i] = capacity; // already here: take the newer profile, keep the place
            continue;
        }
        m_ids.push_back(id);
        m_capacities.push_back(capacity);
        m_clusterOf.push_back(-1);
        if (!m_hasPlan)
            continue;
        const size_t i = m_ids.size() - 1;
        const auto before = m_clusterOf;
        auto r = swarm::planJoin(m_capacities, m_clusterOf, i, m_demand, closed);
        m_clusterOf = std::move(r.clustering.clusterOf);
        if (m_clusterOf[i] >= 0) {
            changed.insert(m_clusterOf[i]);
            arrivals.push_back(id);
        }
        insertClusters(changed, before, m_clusterOf, r.moved);
        for (size_t j : r.moved)
            moved.insert(m_ids[j]);
    }
    if (m_hasPlan && (!changed.empty() || !leaves.empty())) {
        std::set<int> working;
        for (size_t c = 0; c < m_plan.pipelines.size(); ++c)
            if (!m_plan.pipelines[c].stages.empty())
                working.insert(int(c));
        complete({changed.begin(), changed.end()});
        undoBreakingArrivals(arrivals, working);
    }
    change.moved.assign(moved.begin(), moved.end());
    change.changedClusters.assign(changed.begin(), changed.end());
    return change;
}

std::optional<std::vector<size_t>> PlanState::finishedMatesOf(size_t leaver,
                                                              const std::set<std::string> &finished) const
{
    if (finished.empty())
        return std::nullopt;
    std::vector<size_t> mates;
    for (size_t j = 0; j < m_ids.size(); ++j) {
        if (j == leaver || m_clusterOf[j] != m_clusterOf[leaver])
            continue;
        if (!finished.count(m_ids[j]))
            return std::nullopt; // someone there still trains: re-planned as any leave
        mates.push_back(j);
    }
    return mates;
}

// planJoin and planLeave judge clusters by the search's closed-form estimate; the
// partitioner may then find no cut that fits the grown cluster (more stages hold more
// weight versions in flight). An arrival must not stop a cluster that worked: the
// newcomer waits instead.
void PlanState::undoBreakingArrivals(const std::vector<std::string> &arrivals, const std::set<int> &working)
{
    // The arrivals in each cluster that worked and has no pipeline now, in arrival order.
    std::map<int, std::vector<size_t>> broken;
    for (const auto &id : arrivals) {
        const size_t i = indexOf(id);
        if (i >= m_ids.size())
            continue;
        const int c = m_clusterOf[i];
        if (c >= 0 && working.count(c) &&
            (size_t(c) >= m_plan.pipelines.size() || m_plan.pipelines[size_t(c)].stages.empty()))
            broken[c].push_back(i);
    }
    if (broken.empty())
        return;
    // Clusters are judged apart, each from its own members: the latest arrival waits
    // first, until the cluster holds the model again (the closed form) and a cut fits.
    // One complete() at the end: one per undo re-planned the whole swarm each time, and
    // a storm's round at 10,000 volunteers undid thousands.
    std::map<int, std::vector<size_t>> members;
    for (size_t i = 0; i < m_clusterOf.size(); ++i)
        if (broken.count(m_clusterOf[i]))
            members[m_clusterOf[i]].push_back(i);
    const auto v = volunteers();
    std::vector<int> undone;
    for (auto &[c, list] : broken) {
        auto &in = members[c];
        for (auto it = list.rbegin(); it != list.rend(); ++it) {
            m_clusterOf[*it] = -1;
            std::erase(in, *it);
            if (in.empty())
                break;
            std::vector<swarm::Capacity> capacities;
            for (size_t i : in)
                capacities.push_back(m_capacities[i]);
            if (swarm::clusterSpeed(capacities, m_demand) <= 0)
                continue;
            try {
                swarm::planPipeline(m_model, v, in);
                break;
            } catch (const Error &) { }
        }
        undone.push_back(c);
    }
    complete(undone);
}

PlanChange PlanState::planAll()
{
    auto plan = swarm::planSwarm(m_model, volunteers(), m_options);
    PlanChange change;
    change.replanned = true;
    for (size_t i = 0; i < m_ids.size(); ++i)
        if (m_hasPlan && m_clusterOf[i] != plan.clustering.clusterOf[i])
            change.moved.push_back(m_ids[i]);
    for (int c = 0; c < plan.clustering.clusterCount(); ++c)
        change.changedClusters.push_back(c);
    m_clusterOf = plan.clustering.clusterOf;
    m_plan = std::move(plan);
    m_hasPlan = true;
    return change;
}

std::vector<Placement> PlanState::placements() const
{
    std::vector<Placement> out(m_ids.size());
    for (size_t i = 0; i < m_ids.size(); ++i) {
        out[i].nodeId = m_ids[i];
        out[i].cluster = m_clusterOf[i];
        out[i].clusterCount = m_hasPlan ? m_plan.clustering.clusterCount() : 0;
        out[i].reason = waitingReason(m_hasPlan, m_clusterOf[i]);
    }
    if (!m_hasPlan)
        return out;
    for (size_t c = 0; c < m_plan.pipelines.size(); ++c) {
        const auto &p = m_plan.pipelines[c];
        for (size_t s = 0; s < p.stages.size(); ++s) {
            auto &pl = out[p.stages[s]];
            pl.training = true;
            pl.reason.clear();
            pl.stage = int(s);
            pl.stages = int(p.stages.size());
            pl.firstLayer = p.partition.stages[s].firstLayer;
            pl.lastLayer = p.partition.stages[s].lastLayer;
            pl.previous = s > 0 ? m_ids[p.stages[s - 1]] : "";
            pl.next = s + 1 < p.stages.size() ? m_ids[p.stages[s + 1]] : "";
        }
    }
    for (const auto &r : m_plan.rings) {
        auto members = std::make_shared<std::vector<std::string>>();
        members->reserve(r.members.size());
        for (size_t i : r.members)
            members->push_back(m_ids[i]);
        for (size_t k = 0; k < r.members.size(); ++k)
            out[r.members[k]].rings.push_back({r.id, r.firstLayer, r.lastLayer, k, members});
    }
    return out;
}

std::string PlanState::toJson() const
{
    json pipelines = json::array();
    for (size_t c = 0; c < m_plan.pipelines.size(); ++c) {
        const auto &p = m_plan.pipelines[c];
        if (!p.stages.empty())
            pipelines.push_back({{"cluster", c}, {"stages", p.stages}, {"cuts", p.partition.cuts()}});
    }
    return json{{"has_plan", m_hasPlan}, {"ids", m_ids}, {"cluster_of", m_clusterOf}, {"pipelines", pipelines}}.dump();
}

PlanState PlanState::fromJson(swarm::PlanModel model, swarm::FormationOptions options, const std::string &text,
                              const std::map<std::string, swarm::Capacity> &capacities)
{
    PlanState s(std::move(model), options);
    try {
        const json j = json::parse(text);
        s.m_ids = j.at("ids").get<std::vector<std::string>>();
        s.m_clusterOf = j.at("cluster_of").get<std::vector<int>>();
        if (s.m_clusterOf.size() != s.m_ids.size())
            throw Error("the plan lists " + std::to_string(s.m_ids.size()) + " volunteers but " +
                        std::to_string(s.m_clusterOf.size()) + " clusters");
        for (const auto &id : s.m_ids) {
            const auto it = capacities.find(id);
            if (it == capacities.end())
                throw Error("the plan names volunteer " + id.substr(0, 12) + ", which is not stored");
            s.m_capacities.push_back(it->second);
        }
        s.m_hasPlan = j.at("has_plan").get<bool>();
        if (!s.m_hasPlan)
            return s;
        const auto costs = model::layerCosts(s.m_model.spec, s.m_model.microbatch);
        const auto po =
            model::partitionOptionsFor(s.m_model.spec, s.m_model.microbatch, s.m_model.optimizerStateCopies);
        swarm::SwarmPlan previous;
        for (const auto &p : j.at("pipelines")) {
            const auto c = p.at("cluster").get<size_t>();
            swarm::PipelinePlan pipe;
            pipe.stages = p.at("stages").get<std::vector<size_t>>();
            std::vector<model::StageDevice> devices;
            for (size_t i : pipe.stages) {
                if (i >= s.m_ids.size())
                    throw Error("the plan's pipeline names volunteer " + std::to_string(i) + " of " +
                                std::to_string(s.m_ids.size()));
                const auto &cap = s.m_capacities[i];
                devices.push_back({s.m_ids[i], cap.gflops, uint64_t(cap.memoryBytes), cap.bandwidthBytesPerSecond});
            }
            pipe.partition = model::evaluateCut(costs, devices, po, p.at("cuts").get<std::vector<size_t>>());
            pipe.samplesPerSecond = double(s.m_model.microbatch) / pipe.partition.bottleneckSeconds();
            if (previous.pipelines.size() <= c)
                previous.pipelines.resize(c + 1);
            previous.pipelines[c] = std::move(pipe);
        }
        s.m_plan = std::move(previous);
        s.complete({});
    } catch (const json::exception &e) {
        throw Error(std::string("the stored plan is malformed: ") + e.what());
    }
    return s;
}

} // namespace rookery::coord
