// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/assignment.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/data/dataset_manifest.h"
#include "engine/swarm/outer_optimizer.h"

namespace rookery::coord {

std::string_view assignmentStateName(AssignmentState state)
{
    switch (state) {
    case AssignmentState::Waiting:
        return "waiting";
    case AssignmentState::Training:
        return "training";
    case AssignmentState::Stopped:
        return "stopped";
    }
    return "?";
}

std::string_view nodeActivityName(NodeActivity activity)
{
    switch (activity) {
    case NodeActivity::Unknown:
        return "unknown";
    case NodeActivity::Waiting:
        return "waiting";
    case NodeActivity::Loading:
        return "loading";
    case NodeActivity::Training:
        return "training";
    case NodeActivity::Paused:
        return "paused";
    case NodeActivity::Failed:
        return "failed";
    }
    return "?";
}

std::string_view awayReasonName(AwayReason reason)
{
    switch (reason) {
    case AwayReason::None:
        return "";
    case AwayReason::PausedByUser:
        return "paused by its user";
    case AwayReason::Snoozed:
        return "snoozed";
    case AwayReason::OnBattery:
        return "on battery";
    case AwayReason::OutsideSchedule:
        return "outside its schedule";
    case AwayReason::WaitingForIdle:
        return "waiting for idle";
    }
    return "?";
}

bool Assignment::namesPeer(const std::string &nodeId) const
{
    if (previous.nodeId == nodeId || next.nodeId == nodeId || weightsFrom.nodeId == nodeId)
        return true;
    for (const auto &r : rings)
        if (r.previous.nodeId == nodeId || r.next.nodeId == nodeId)
            return true;
    return false;
}

bool Assignment::samePlacement(const Assignment &o) const { return sameExceptRings(o) && rings == o.rings; }

bool Assignment::sameExceptRings(const Assignment &o) const
{
    return state == o.state && cluster == o.cluster && clusterCount == o.clusterCount && stage == o.stage &&
           stages == o.stages && firstLayer == o.firstLayer && lastLayer == o.lastLayer && previous == o.previous &&
           next == o.next && shard.index == o.shard.index && shard.count == o.shard.count &&
           weightsFrom == o.weightsFrom && reason == o.reason;
}

bool Assignment::keepsStage(const Assignment &next) const
{
    const auto sameSeat = [](const RingRef &x, const RingRef &y) {
        return x.ringId == y.ringId && x.firstLayer == y.firstLayer && x.lastLayer == y.lastLayer;
    };
    if (!std::equal(rings.begin(), rings.end(), next.rings.begin(), next.rings.end(), sameSeat))
        return false;
    Assignment same = next;
    same.weightsFrom = weightsFrom; // only read as the stage starts
    return sameExceptRings(same);
}

bool Assignment::sameReachability(const Assignment &o) const
{
    // Called for every node at every plan round: compare in place, allocating nothing.
    if (unreachable != o.unreachable || previous.unreachable != o.previous.unreachable ||
        next.unreachable != o.next.unreachable || weightsFrom.unreachable != o.weightsFrom.unreachable ||
        rings.size() != o.rings.size())
        return false;
    for (size_t i = 0; i < rings.size(); ++i)
        if (rings[i].previous.unreachable != o.rings[i].previous.unreachable ||
            rings[i].next.unreachable != o.rings[i].next.unreachable)
            return false;
    return true;
}

bool Assignment::operator==(const Assignment &o) const
{
    return version == o.version && samePlacement(o) && sameReachability(o);
}

std::string Assignment::describe() const
{
    std::string s(assignmentStateName(state));
    if (state == AssignmentState::Training) {
        s += ": cluster " + std::to_string(cluster) + "/" + std::to_string(clusterCount) + ", stage " +
             std::to_string(stage) + "/" + std::to_string(stages) + ", layers [" + std::to_string(firstLayer) + "," +
             std::to_string(lastLayer) + "), " + std::to_string(rings.size()) +
             (rings.size() == 1 ? " ring" : " rings") + ", shard " + std::to_string(shard.index) + "/" +
             std::to_string(shard.count);
        if (!weightsFrom.empty())
            s += ", weights from " + weightsFrom.nodeId.substr(0, 12);
    } else if (!reason.empty()) {
        // Reasons often begin with the state's own word ("waiting: registered; ..."): once.
        s = reason.rfind(s, 0) == 0 ? reason : s + ": " + reason;
    }
    return s + " (v" + std::to_string(version) + ")";
}

void validate(const RunConfig &run)
{
    if (run.microbatch < 1)
        throw Error("run: the microbatch must be at least 1, not " + std::to_string(run.microbatch));
    if (run.accumulation < 1)
        throw Error("run: accumulation must be at least 1, not " + std::to_string(run.accumulation));
    if (run.averagingInterval < 1)
        throw Error("run: the averaging interval must be at least 1 step, not " +
                    std::to_string(run.averagingInterval));
    if (const std::string why = swarm::OuterSettings{run.outerLearningRate, run.outerMomentum}.problem(); !why.empty())
        throw Error("run: " + why);
    if (run.maxWindow < 0 || run.maxWindow > kMaxWindowLimit)
        throw Error("run: the window cap must be 0 (the nodes' default) to " + std::to_string(kMaxWindowLimit) +
                    " microbatches, not " + std::to_string(run.maxWindow));
    if (run.totalSteps < 0)
        throw Error("run: total steps cannot be negative");
    if (run.dataset.empty() || run.dataset.size() > 64 ||
        run.dataset.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos)
        throw Error("run: the dataset name '" + run.dataset.substr(0, 80) +
                    "' is not 1 to 64 of a-z, 0-9, '.', '_' and '-'");
    if (!run.datasetSha256.empty() && !data::isSha256(run.datasetSha256))
        throw Error("run: the dataset hash is not a SHA-256 (64 lowercase hex digits)");
    if (run.dataset != "fashion-mnist" && run.datasetSha256.empty())
        throw Error("run: dataset '" + run.dataset +
                    "' has no content hash: only Fashion-MNIST may be read from each node's own copy");
    model::validate(run.model);
    train::validate(run.optimizer);
}

} // namespace rookery::coord
