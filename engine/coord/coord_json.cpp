// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/coord_json.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace rookery::coord {
namespace {

using nlohmann::json;

json peerJson(const PeerRef &p)
{
    if (p.empty())
        return nullptr;
    json j{{"node_id", p.nodeId}, {"address", p.address}};
    if (p.unreachable)
        j["unreachable"] = true;
    return j;
}

PeerRef peerFrom(const json &j)
{
    if (j.is_null())
        return {};
    return {j.at("node_id").get<std::string>(), j.at("address").get<std::string>(), j.value("unreachable", false)};
}

AssignmentState stateFrom(const std::string &name)
{
    for (auto s : {AssignmentState::Waiting, AssignmentState::Training, AssignmentState::Stopped})
        if (assignmentStateName(s) == name)
            return s;
    throw Error("unknown assignment state '" + name + "'");
}

} // namespace

std::string toJson(const Assignment &a)
{
    json rings = json::array();
    for (const auto &r : a.rings)
        rings.push_back({{"ring_id", r.ringId},
                         {"first_layer", r.firstLayer},
                         {"last_layer", r.lastLayer},
                         {"rank", r.rank},
                         {"size", r.size},
                         {"previous", peerJson(r.previous)},
                         {"next", peerJson(r.next)}});
    return json{{"version", a.version},
                {"state", assignmentStateName(a.state)},
                {"reason", a.reason},
                {"cluster", a.cluster},
                {"cluster_count", a.clusterCount},
                {"stage", a.stage},
                {"stages", a.stages},
                {"first_layer", a.firstLayer},
                {"last_layer", a.lastLayer},
                {"previous", peerJson(a.previous)},
                {"next", peerJson(a.next)},
                {"rings", rings},
                {"shard_index", a.shard.index},
                {"shard_count", a.shard.count},
                {"weights_from", peerJson(a.weightsFrom)},
                {"unreachable", a.unreachable}}
        .dump();
}

Assignment assignmentFromJson(std::string_view text)
{
    try {
        const json j = json::parse(text);
        Assignment a;
        a.version = j.at("version").get<uint64_t>();
        a.state = stateFrom(j.at("state").get<std::string>());
        a.reason = j.at("reason").get<std::string>();
        a.cluster = j.at("cluster").get<int>();
        a.clusterCount = j.at("cluster_count").get<int>();
        a.stage = j.at("stage").get<int>();
        a.stages = j.at("stages").get<int>();
        a.firstLayer = j.at("first_layer").get<size_t>();
        a.lastLayer = j.at("last_layer").get<size_t>();
        a.previous = peerFrom(j.at("previous"));
        a.next = peerFrom(j.at("next"));
        for (const auto &r : j.at("rings")) {
            const auto id = r.at("ring_id").get<uint64_t>();
            const auto first = r.at("first_layer").get<size_t>(), last = r.at("last_layer").get<size_t>();
            const auto rank = r.at("rank").get<size_t>();
            if (r.contains("members")) { // rows written before protocol 2 list every member
                std::vector<PeerRef> members;
                for (const auto &m : r.at("members"))
                    members.push_back(peerFrom(m));
                if (rank >= std::max<size_t>(1, members.size()))
                    throw Error("a stored assignment's ring rank " + std::to_string(rank) + " is past its " +
                                std::to_string(members.size()) + " members");
                a.rings.push_back(
                    ringSeat(id, first, last, members.size(), rank, [&](size_t k) { return members[k]; }));
                continue;
            }
            RingRef ring{
                id, first, last, rank, r.at("size").get<size_t>(), peerFrom(r.at("previous")), peerFrom(r.at("next"))};
            const bool neighbours = !ring.previous.empty() && !ring.next.empty();
            if (ring.size < 1 || ring.rank >= ring.size || neighbours != (ring.size >= 2) ||
                (!neighbours && !(ring.previous.empty() && ring.next.empty())))
                throw Error("a stored assignment's ring " + std::to_string(id) + " is malformed: rank " +
                            std::to_string(ring.rank) + " of " + std::to_string(ring.size) +
                            (neighbours ? ", with neighbours" : ", without both neighbours"));
            a.rings.push_back(std::move(ring));
        }
        a.shard = {j.at("shard_index").get<int>(), j.at("shard_count").get<int>()};
        a.weightsFrom = peerFrom(j.at("weights_from"));
        a.unreachable = j.value("unreachable", false); // rows written before version 0.1.1 lack it
        return a;
    } catch (const json::exception &e) {
        throw Error(std::string("a stored assignment is malformed: ") + e.what());
    }
}

std::string toJson(const RunConfig &r)
{
    return json{{"run_id", r.runId},
                {"model", json::parse(model::toJson(r.model))},
                {"optimizer", json::parse(train::toJson(r.optimizer))},
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
                {"dataset_sha256", r.datasetSha256}}
        .dump();
}

RunConfig runConfigFromJson(std::string_view text)
{
    try {
        const json j = json::parse(text);
        RunConfig r;
        r.runId = j.at("run_id").get<std::string>();
        r.model = model::modelSpecFromJson(j.at("model").dump());
        r.optimizer = train::optimizerConfigFromJson(j.at("optimizer").dump());
        r.microbatch = j.at("microbatch").get<int64_t>();
        r.accumulation = j.at("accumulation").get<int64_t>();
        r.averagingInterval = j.at("averaging_interval").get<int64_t>();
        // Runs stored before the outer optimizer averaged plainly.
        r.outerLearningRate = j.value("outer_learning_rate", 1.0);
        r.outerMomentum = j.value("outer_momentum", 0.0);
        r.overlapAveraging = j.value("overlap_averaging", false);
        r.maxWindow = j.value("max_window", int64_t(0)); // runs stored before the cap was a setting
        r.seed = j.at("seed").get<uint64_t>();
        r.totalSteps = j.at("total_steps").get<int64_t>();
        r.dataset = j.at("dataset").get<std::string>();
        r.datasetSha256 = j.value("dataset_sha256", std::string()); // runs stored before datasets were served
        return r;
    } catch (const json::exception &e) {
        throw Error(std::string("a stored run configuration is malformed: ") + e.what());
    }
}

} // namespace rookery::coord
