// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/coord_json.h"

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
    for (const auto &r : a.rings) {
        json members = json::array();
        for (const auto &m : r.members)
            members.push_back(peerJson(m));
        rings.push_back({{"ring_id", r.ringId},
                         {"first_layer", r.firstLayer},
                         {"last_layer", r.lastLayer},
                         {"rank", r.rank},
                         {"members", members}});
    }
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
            RingRef ring{r.at("ring_id").get<uint64_t>(),
                         r.at("first_layer").get<size_t>(),
                         r.at("last_layer").get<size_t>(),
                         r.at("rank").get<size_t>(),
                         {}};
            for (const auto &m : r.at("members"))
                ring.members.push_back(peerFrom(m));
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
                {"seed", r.seed},
                {"total_steps", r.totalSteps},
                {"dataset", r.dataset}}
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
        r.seed = j.at("seed").get<uint64_t>();
        r.totalSteps = j.at("total_steps").get<int64_t>();
        r.dataset = j.at("dataset").get<std::string>();
        return r;
    } catch (const json::exception &e) {
        throw Error(std::string("a stored run configuration is malformed: ") + e.what());
    }
}

} // namespace rookery::coord
