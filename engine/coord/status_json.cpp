// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/status_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

namespace rookery::coord {
namespace {

using nlohmann::json;

json runJson(const RunConfig &r, const std::string &job)
{
    json names = json::array();
    for (const auto &l : r.model.layers)
        names.push_back(l.describe());
    return {{"id", r.runId},
            {"job", job},
            {"model", r.model.name},
            {"layers", r.model.layers.size()},
            {"layer_names", std::move(names)},
            {"parameters", model::parameterCount(r.model)},
            {"optimizer", train::optimizerKindName(r.optimizer.kind)},
            {"learning_rate", r.optimizer.learningRate},
            {"microbatch", r.microbatch},
            {"accumulation", r.accumulation},
            {"averaging_interval", r.averagingInterval},
            {"outer_learning_rate", r.outerLearningRate},
            {"outer_momentum", r.outerMomentum},
            {"overlap_averaging", r.overlapAveraging},
            {"max_window", r.maxWindow},
            {"seed", r.seed},
            {"total_steps", r.totalSteps},
            {"dataset", r.dataset},
            {"dataset_sha256", r.datasetSha256}};
}

// A note for everyone to read: the node's own address, and anything else that looks
// like an IP address (a dial error may name one), replaced by words.
std::string redacted(std::string note, const std::string &address)
{
    for (size_t at; !address.empty() && (at = note.find(address)) != std::string::npos;)
        note.replace(at, address.size(), "its address");
    static const std::regex ip(R"(\[[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\](:\d+)?|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b)");
    return std::regex_replace(note, ip, "an address");
}

json nodeJson(const NodeStatus &n, StatusView view)
{
    const bool full = view == StatusView::Full;
    json j = {{"id", n.nodeId},
              {"name", n.name},
              {"software", n.software},
              {"presence", presenceName(n.presence)},
              {"reachability", reachabilityName(n.reachability)},
              {"state", assignmentStateName(n.state)},
              {"activity", nodeActivityName(n.report.activity)},
              {"assignment_version", n.assignmentVersion},
              {"cluster", n.cluster},
              {"samples_per_second", n.report.samplesPerSecond},
              {"step", n.report.step},
              {"loss", n.report.loss},
              {"samples_total", n.report.samplesTotal},
              {"busy_fraction", n.report.busyFraction},
              {"last_seen_ms_ago", n.lastSeenMsAgo},
              {"heartbeats", n.heartbeats}};
    if (full) { // where it is and what it has: the operator's business only
        j["address"] = n.address;
        j["gflops"] = n.capacity.gflops;
        j["memory_bytes"] = n.capacity.memoryBytes;
        j["upload_bytes_per_second"] = n.capacity.bandwidthBytesPerSecond;
        j["upload_assumed"] = n.assumedBandwidth;
        if (!n.report.links.empty()) { // its links to its neighbours, as it measured them
            json links = json::array();
            for (const auto &[peer, link] : n.report.links)
                links.push_back({{"peer", peer},
                                 {"upload_bytes_per_second", link.uploadBytesPerSecond},
                                 {"round_trip_us", link.roundTripUs}});
            j["links"] = std::move(links);
        }
    }
    if (!n.reachabilityNote.empty())
        j["reachability_note"] = full ? n.reachabilityNote : redacted(n.reachabilityNote, n.address);
    if (n.report.away != AwayReason::None)
        j["away"] = awayReasonName(n.report.away);
    if (n.report.sleptSeconds > 0)
        j["slept_seconds"] = n.report.sleptSeconds;
    if (n.report.ownSamplesPerSecond > 0 && std::isfinite(n.report.ownSamplesPerSecond))
        j["own_samples_per_second"] = n.report.ownSamplesPerSecond;
    if (n.state == AssignmentState::Training) {
        j["stage"] = n.stage;
        j["first_layer"] = n.firstLayer;
        j["last_layer"] = n.lastLayer;
    }
    return j;
}

} // namespace

PlanSummary summarize(const PlanState &state)
{
    PlanSummary s;
    s.hasPlan = state.isWorking();
    if (!state.hasPlan())
        return s;
    const auto &plan = state.plan();
    const auto &ids = state.ids();
    s.predictedSamplesPerSecond = plan.predictedSamplesPerSecond;
    const int k = plan.clustering.clusterCount();
    for (int c = 0; c < k; ++c) {
        PlanSummary::Cluster cl;
        cl.id = c;
        for (size_t i = 0; i < plan.clustering.clusterOf.size(); ++i)
            if (plan.clustering.clusterOf[i] == c)
                cl.members.push_back(ids[i]);
        if (cl.members.empty())
            continue;
        if (size_t(c) < plan.pipelines.size() && !plan.pipelines[size_t(c)].stages.empty()) {
            const auto &p = plan.pipelines[size_t(c)];
            cl.feasible = true;
            cl.predictedSamplesPerSecond = p.samplesPerSecond;
            for (size_t st = 0; st < p.stages.size(); ++st) {
                const auto &sp = p.partition.stages[st];
                cl.stages.push_back({ids[p.stages[st]], sp.firstLayer, sp.lastLayer, sp.seconds, sp.memoryBytes});
            }
        }
        s.clusters.push_back(std::move(cl));
    }
    for (const auto &r : plan.rings) {
        PlanSummary::Ring ring{r.id, r.firstLayer, r.lastLayer, {}};
        for (size_t i : r.members)
            ring.members.push_back(ids[i]);
        s.rings.push_back(std::move(ring));
    }
    return s;
}

std::string statusJson(const StatusInputs &in, StatusView view)
{
    std::map<std::string, const NodeStatus *> byId;
    for (const auto &n : in.nodes)
        byId.emplace(n.nodeId, &n);
    auto measured = [&](const std::string &id) {
        const auto it = byId.find(id);
        return it != byId.end() && it->second->presence == Presence::Online ? it->second->report.samplesPerSecond : 0.0;
    };
    json clusters = json::array(), links = json::array(), rings = json::array(), nodes = json::array();
    const auto costs = model::layerCosts(in.run.model, in.run.microbatch);
    const auto parametersOf = [&](size_t first, size_t last) {
        int64_t n = 0;
        for (size_t i = first; i < last && i < costs.size(); ++i)
            n += costs[i].parameters;
        return n;
    };
    double slowestMeasured = std::numeric_limits<double>::infinity();
    int working = 0;
    for (const auto &c : in.plan.clusters) {
        json stages = json::array();
        // A pipeline moves as fast as its slowest stage.
        double clusterMeasured = c.stages.empty() ? 0 : std::numeric_limits<double>::infinity();
        for (size_t s = 0; s < c.stages.size(); ++s) {
            const auto &st = c.stages[s];
            const double m = measured(st.nodeId);
            clusterMeasured = std::min(clusterMeasured, m);
            stages.push_back({{"stage", s},
                              {"node_id", st.nodeId},
                              {"first_layer", st.firstLayer},
                              {"last_layer", st.lastLayer},
                              {"predicted_seconds_per_microbatch", st.predictedSeconds},
                              {"memory_bytes", st.memoryBytes},
                              {"parameters", parametersOf(st.firstLayer, st.lastLayer)},
                              {"measured_samples_per_second", m}});
            if (s + 1 < c.stages.size())
                links.push_back(
                    {{"kind", "pipeline"}, {"cluster", c.id}, {"from", st.nodeId}, {"to", c.stages[s + 1].nodeId}});
        }
        if (c.feasible) {
            ++working;
            slowestMeasured = std::min(slowestMeasured, clusterMeasured);
        }
        clusters.push_back(
            {{"id", c.id},
             {"state", c.feasible ? "training" : "waiting"},
             {"members", c.members},
             {"stages", stages},
             {"predicted_samples_per_second", c.predictedSamplesPerSecond},
             {"measured_samples_per_second", clusterMeasured},
             {"shard", {{"index", c.id}, {"count", in.plan.clusters.empty() ? 0 : in.plan.clusters.back().id + 1}}}});
    }
    for (const auto &r : in.plan.rings) {
        rings.push_back(
            {{"id", r.id}, {"first_layer", r.firstLayer}, {"last_layer", r.lastLayer}, {"members", r.members}});
        for (size_t i = 0; r.members.size() > 1 && i < r.members.size(); ++i) {
            if (r.members.size() == 2 && i == 1)
                break; // a ring of two is one link
            links.push_back({{"kind", "ring"},
                             {"ring_id", r.id},
                             {"from", r.members[i]},
                             {"to", r.members[(i + 1) % r.members.size()]}});
        }
    }
    size_t online = 0, direct = 0, unreachable = 0;
    for (const auto &n : in.nodes) {
        nodes.push_back(nodeJson(n, view));
        online += n.presence == Presence::Online;
        direct += n.reachability == Reachability::Direct;
        unreachable += n.reachability == Reachability::Unreachable;
    }
    json doc = {{"swarm", in.swarm},
                {"view", view == StatusView::Full ? "full" : "public"},
                {"time_ms", in.timeMs},
                {"uptime_ms", in.uptimeMs},
                {"run", runJson(in.run, in.jobName)},
                {"plan",
                 {{"planned", in.plan.hasPlan},
                  {"clusters", working},
                  {"predicted_samples_per_second", in.plan.predictedSamplesPerSecond},
                  {"measured_samples_per_second", working ? working * slowestMeasured : 0.0},
                  {"rounds", in.plan.rounds},
                  {"last_round_ms", in.plan.lastRoundMs}}},
                {"clusters", clusters},
                {"rings", rings},
                {"links", links},
                {"nodes", nodes},
                {"counts",
                 {{"nodes", in.nodes.size()},
                  {"online", online},
                  {"reachable", direct},
                  {"unreachable", unreachable},
                  {"registrations", in.counters.registrations},
                  {"refusals", in.counters.refusals},
                  {"heartbeats", in.counters.heartbeats},
                  {"assignment_pushes", in.counters.assignmentPushes},
                  {"relay_grants", in.counters.relayGrants},
                  {"relayed_bytes", in.relayedBytes}}}};
    if (view == StatusView::Full) {
        doc["coordinator"] = in.address;
        doc["join"] = in.address; // what volunteers paste: the address and its pin
    }
    return doc.dump();
}

} // namespace rookery::coord
