// SPDX-License-Identifier: GPL-3.0-or-later
// AssignedStage as it starts: its own checkpoint, the layers it kept from another range,
// and the layers it takes over or catches up on, fetched from peers.
#include <algorithm>

#include "engine/common/error.h"
#include "engine/participant/assigned_stage_state.h"
#include "engine/store/checkpoint_store.h"
#include "engine/swarm/learning_rate_schedule.h"
#include "engine/swarm/ring_averaging.h"

namespace rookery::participant {
namespace {

std::vector<std::string> parameterNames(const model::ModelSpec &spec, size_t first, size_t last)
{
    std::vector<std::string> names;
    const auto costs = model::layerCosts(spec, 1);
    for (size_t l = first; l < last; ++l)
        if (costs[l].parameters > 0) {
            names.push_back(std::to_string(l) + ".weight");
            names.push_back(std::to_string(l) + ".bias");
        }
    return names;
}

} // namespace

// This node's newest checkpoint of the same layers, if any and usable.
bool AssignedStage::Impl::restoreCheckpoint(const std::string &what)
{
    auto cp = config.checkpoints->loadNewest(checkpointRun);
    if (!cp)
        return false;
    try {
        try {
            runtime->restore(cp->state);
        } catch (const Error &) {
            // The data shard may have changed since (a re-plan): keep the weights and
            // start the new shard from its beginning.
            if (cp->state.cursor == data::SamplerCursor{})
                throw;
            cp->state.cursor = {};
            runtime->restore(cp->state);
        }
        say("resuming " + what + " from its checkpoint at step " + std::to_string(cp->state.step));
        return true;
    } catch (const Error &e) {
        say("the checkpoint of " + what + " cannot be used (" + std::string(e.what()) + "); starting afresh");
        return false;
    }
}

// The layers range changed (a re-plan moved a cut): the layers this node trained
// before and still holds come back from its newest checkpoint of another range, with
// their optimizer state and the step, so that only the layers it takes over are new.
// Returns the layers kept, or nothing when it has no such checkpoint. A node that keeps
// none of its layers (a re-cut that swapped the stages of its cluster) still goes on
// from the step of its newest checkpoint of the run, as its partners do: starting at
// step 0 would restart the run's schedule for the cluster (its learning rate, its end).
std::optional<std::pair<size_t, size_t>> AssignedStage::Impl::keepOwnLayers()
{
    const auto &as = a();
    const std::string prefix = "swarm:" + config.run.runId + ":layers ";
    std::optional<store::CheckpointInfo> best, newest;
    std::pair<size_t, size_t> bestRange;
    for (const auto &info : config.checkpoints->list()) { // newest first
        if (info.run.rfind(prefix, 0) != 0 || info.run == checkpointRun)
            continue;
        if (!newest)
            newest = info;
        size_t first = 0, last = 0;
        if (std::sscanf(info.run.c_str() + prefix.size(), "%zu-%zu", &first, &last) != 2)
            continue;
        const size_t lo = std::max(first, as.firstLayer), hi = std::min(last, as.lastLayer);
        if (lo >= hi)
            continue;
        best = info;
        bestRange = {lo, hi};
        break;
    }
    if (!best) {
        if (newest)
            keepOwnStep(*newest);
        return std::nullopt;
    }
    try {
        auto old = config.checkpoints->load(best->id).state;
        auto merged = runtime->state();
        const auto take = [](std::vector<NamedTensor> &into, const std::vector<NamedTensor> &from) {
            for (auto &t : into)
                for (const auto &f : from)
                    if (f.name == t.name && f.dtype == t.dtype && f.shape == t.shape) {
                        t = f;
                        break;
                    }
        };
        take(merged.parameters, old.parameters);
        take(merged.optimizerState, old.optimizerState); // "step" included
        merged.cursor = {};                              // the shard starts over with the new range
        runtime->restore(merged);
        say("kept its own layers " + std::to_string(bestRange.first) + "-" + std::to_string(bestRange.second - 1) +
            " from its checkpoint at step " + std::to_string(best->step));
        return bestRange;
    } catch (const Error &e) {
        say("its checkpoint of " + best->run.substr(prefix.size()) + " cannot be used (" + std::string(e.what()) + ")");
        return std::nullopt;
    }
}

// The step of `from` (a checkpoint of other layers of this run), without its layers.
void AssignedStage::Impl::keepOwnStep(const store::CheckpointInfo &from)
{
    try {
        const auto old = config.checkpoints->load(from.id).state;
        auto merged = runtime->state();
        for (auto &t : merged.optimizerState)
            for (const auto &f : old.optimizerState)
                if (t.name == "step" && f.name == t.name && f.dtype == t.dtype && f.shape == t.shape)
                    t = f;
        merged.cursor = {}; // the shard starts over with the new range
        runtime->restore(merged);
        say("goes on from step " + std::to_string(runtime->version()) +
            ", the step of its checkpoint of the layers it held before");
    } catch (const Error &e) {
        say("its checkpoint of step " + std::to_string(from.step) + " cannot be used (" + std::string(e.what()) +
            "); starting at step 0");
    }
}

void AssignedStage::Impl::restore()
{
    const auto &as = a();
    const std::string what = "stage " + std::to_string(as.stage + 1) + "/" + std::to_string(as.stages) + " (layers " +
                             std::to_string(as.firstLayer) + "-" + std::to_string(as.lastLayer - 1) + ")";
    const bool restored = restoreCheckpoint(what);
    auto names = parameterNames(config.run.model, as.firstLayer, as.lastLayer);
    const auto kept = restored ? std::nullopt : keepOwnLayers();
    if (kept)
        names.erase(std::remove_if(names.begin(), names.end(),
                                   [&](const std::string &n) {
                                       const size_t l = swarm::layerOfParameter(n);
                                       return l >= kept->first && l < kept->second;
                                   }),
                    names.end());
    // Catch up: a peer in another cluster that holds the same layers has kept training
    // (after a restart), or holds the layers this node takes over. That cluster may cut
    // elsewhere, so the peer named may hold only some of them: the members of this
    // stage's rings, one per range of layers, hold the rest.
    std::vector<std::string> sources;
    const auto addSource = [&sources](const std::string &id) {
        if (!id.empty() && std::find(sources.begin(), sources.end(), id) == sources.end())
            sources.push_back(id);
    };
    addSource(as.weightsFrom.nodeId);
    for (const auto &r : rings) {
        const bool sameLayers = r.ref.firstLayer == as.firstLayer && r.ref.lastLayer == as.lastLayer;
        if (restored ? as.weightsFrom.empty() && sameLayers : !as.weightsFrom.empty())
            addSource(r.previous);
    }
    std::vector<std::string> from;
    for (const auto &source : sources) {
        if (names.empty())
            break;
        // Taking layers over, wait out a peer that cannot be dialled directly: the mesh
        // falls back to the relay after 20 s, and a fetch that gave up at the same moment
        // would throw the layers' training away.
        auto weights = relay->fetch(source, names, std::chrono::seconds(restored ? 5 : 45));
        if (!weights)
            continue;
        runtime->setParameters(*weights);
        from.push_back(source.substr(0, 12));
        for (const auto &t : *weights)
            names.erase(std::remove(names.begin(), names.end(), t.name), names.end());
    }
    std::string peers;
    for (const auto &f : from)
        peers += (peers.empty() ? "" : " and ") + f;
    if (!from.empty())
        say(std::string(restored ? "caught up with" : "took over the current weights of") +
            (from.size() == 1 ? " peer " : " peers ") + peers);
    if (!restored && !sources.empty() && !names.empty())
        say("could not fetch the weights of " + what + " from peer " + sources.front().substr(0, 12) + "; " +
            (kept || !from.empty() ? "the layers it did not hold start" : "starting") +
            " from the run's initial weights (" + std::to_string(names.size()) + " tensors)");
    if (!restored && !kept && sources.empty())
        say("starting " + what + " from the run's initial weights");
    // Round numbers derive from the step; a node resuming behind its ring catches up
    // by adopting the round it sees (swarm::RingAveraging).
    publishSnapshot(runtime->version());
    runtime->setLearningRate(
        swarm::scheduledLearningRate(config.run.optimizer, runtime->version(), config.run.totalSteps));
    lastRateStep = runtime->version();
    stepsDone = runtime->version();
    std::lock_guard lock(mutex);
    progress.step = runtime->version();
    progress.totalSteps = config.run.totalSteps;
}

} // namespace rookery::participant
