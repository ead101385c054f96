// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/assigned_stage.h"

#include "engine/participant/peer_complaints.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/participant/net_ring_links.h"
#include "engine/participant/net_stage_transport.h"
#include "engine/participant/peer_mesh.h"
#include "engine/participant/stage_rings.h"
#include "engine/participant/stage_router.h"
#include "engine/participant/weights_relay.h"
#include "engine/store/checkpoint_store.h"
#include "engine/store/checkpoint_writer.h"
#include "engine/swarm/learning_rate_schedule.h"
#include "engine/swarm/outer_optimizer.h"
#include "engine/swarm/ring_averaging.h"
#include "engine/train/evaluate.h"
#include "engine/train/stage_runtime.h"

namespace rookery::participant {
namespace {

using Clock = std::chrono::steady_clock;

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

std::string swarmCheckpointRun(const std::string &runId, size_t firstLayer, size_t lastLayer)
{
    return "swarm:" + runId + ":layers " + std::to_string(firstLayer) + "-" + std::to_string(lastLayer);
}

struct AssignedStage::Impl
{
    Impl(PeerMesh &m, AssignedStageConfig c, Callbacks cb)
        : mesh(m)
        , config(std::move(c))
        , callbacks(std::move(cb))
    { }

    PeerMesh &mesh;
    AssignedStageConfig config;
    Callbacks callbacks;
    // Declared in the order they depend on each other: the router refers to the links
    // and the relay, the runtime to the transport.
    std::unique_ptr<NetStageTransport> transport;
    std::unique_ptr<WeightsRelay> relay;
    std::vector<StageRing> rings;
    std::unique_ptr<StageRouter> router;
    std::unique_ptr<train::StageRuntime> runtime;
    std::unique_ptr<store::CheckpointWriter> writer;
    std::string checkpointRun;

    std::thread stageThread;
    std::atomic<bool> running{false};

    // The rings average on a thread of their own, against a snapshot of the weights,
    // while the stage trains on; what a round changed is added once it is done.
    struct RingChange
    {
        std::vector<NamedTensor> before, after; // the ring's layers in the snapshot, and averaged
    };
    std::thread averagingThread;
    std::atomic<bool> averagingDone{false};
    std::vector<RingChange> averagingChanges; // the averaging thread's until averagingDone
    int64_t averagingVersion = 0;             // the steps of the round in flight's snapshot

    // New ring members from the control thread (updateRings), taken by the stage thread
    // between rounds (takeRingChanges). Guards them and each ring's `ref`.
    std::mutex ringsMutex;
    std::optional<std::vector<coord::RingRef>> pendingRings;
    std::set<uint64_t> cancelledRings; // their links were cancelled for a change: reset when taken
    bool closing = false;              // the destructor cancelled everything: nothing is reset

    // This stage's optimizer steps, as the stage thread last saw them: the network thread
    // judges a "finished" from the previous stage by it (believableFinish).
    std::atomic<int64_t> stepsDone{0};

    mutable std::mutex mutex; // guards the fields below
    Phase phase = Phase::Waiting;
    int failures = 0; // runs that ended in failure
    std::string lastStop;
    StageProgress progress;

    Clock::time_point lastRateTime = Clock::now();
    int64_t lastRateStep = 0;
    double lastOwnSeconds = 0;
    Clock::time_point lastReport = Clock::now();
    Clock::time_point lastCheckpoint{}; // the stage thread's last periodic checkpoint

    const coord::Assignment &a() const { return config.assignment; }
    bool root() const { return a().stage == 0; }
    int64_t finalMarker() const { return config.run.totalSteps + 1; }
    std::string believableFinish(int64_t rootStep) const;

    void say(const std::string &text)
    {
        log::info("swarm", text);
        if (callbacks.message)
            callbacks.message(text);
    }

    void buildLinks();
    void buildRuntime();
    void restore();
    bool ready = false; // restore() done: the stage may run and checkpoint
    bool restoreCheckpoint(const std::string &what);
    std::optional<std::pair<size_t, size_t>> keepOwnLayers();
    void keepOwnStep(const store::CheckpointInfo &from);
    void onUpdate(int64_t version);
    void averageRings(int64_t round); // now, on this thread (the last round)
    std::vector<RingChange> averageRingsOf(std::vector<NamedTensor> snapshot, int64_t round);
    void startAveraging(int64_t round);
    void collectAveraging(bool wait); // adds a finished round's change; `wait`: for one in flight
    void applyChanges(const std::vector<RingChange> &changes);
    void noteConsensus(std::vector<RingChange> changes, int64_t version);
    void takeRingChanges();
    void publishSnapshot(int64_t version)
    {
        relay->withdraw(); // the old copy goes before the new one is made: one copy at a time
        relay->publish(runtime->parameters(), uint64_t(version));
    }
    void stageMain();
    void settle(const train::StageRunResult &result);
    void finish();
    void evaluated(const train::EvaluationResult &result);
    void noteProgress(int64_t version, bool force);
};

// The root says "finished" after its last step, and the step travels with it (stages
// below may have a different count of their own, after re-plans). A "finished" counts
// as believable when that step is within max(32, 5% of the run) of the end, or this
// stage's own count is; one earlier is a forgery that would end this stage's training
// for good.
std::string AssignedStage::Impl::believableFinish(int64_t rootStep) const
{
    const int64_t total = config.run.totalSteps, done = stepsDone.load();
    const int64_t slack = std::max<int64_t>(32, total / 20);
    if (rootStep + slack >= total || done + slack >= total)
        return {};
    return "it says the root is at step " + std::to_string(rootStep) + " of " + std::to_string(total);
}

void AssignedStage::Impl::buildLinks()
{
    const auto &as = a();
    transport =
        std::make_unique<NetStageTransport>(mesh, as.stage, as.previous.nodeId, as.next.nodeId, config.complaints);
    transport->setFinishCheck([this](int64_t rootStep) { return believableFinish(rootStep); });
    transport->setRootStep([this] { return stepsDone.load(); });
    relay = std::make_unique<WeightsRelay>(mesh, as.stage, as.previous.nodeId, as.next.nodeId, config.complaints);
    router = std::make_unique<StageRouter>(*transport, *relay);
    for (const auto &r : as.rings) {
        StageRing ring{{}, {}, {}, {}, swarm::OuterOptimizer({config.run.outerLearningRate, config.run.outerMomentum}),
                       {}};
        ring.follow(r);
        ring.links = std::make_unique<NetRingLinks>(mesh, r.ringId, ring.next, ring.previous);
        ring.averaging = std::make_unique<swarm::RingAveraging>(config.ringTimeout);
        router->addRing(r.ringId, *ring.links);
        rings.push_back(std::move(ring));
    }
}

void AssignedStage::Impl::buildRuntime()
{
    const auto &as = a();
    train::StageConfig sc;
    sc.model = config.run.model;
    sc.firstLayer = as.firstLayer;
    sc.lastLayer = as.lastLayer;
    sc.stage = as.stage;
    sc.stages = as.stages;
    sc.optimizer = config.run.optimizer;
    sc.microbatchSize = config.run.microbatch;
    sc.accumulation = int(config.run.accumulation);
    sc.mode = train::PipelineMode::Asynchronous;
    sc.maxWindow = config.run.maxWindow > 0 ? int(config.run.maxWindow) : config.maxWindow;
    sc.seed = config.run.seed;
    sc.threads = config.threads;
    sc.shard = config.dataShard.value_or(as.shard);
    sc.onUpdate = [this](int64_t version) { onUpdate(version); };
    // The root tests its pipeline's model by passing the test set through it: no stage
    // ever holds another's weights. The final test follows every stage's last averaging.
    sc.finalEvaluation = true;
    sc.onFinishing = [this] { finish(); };
    if (as.stage == 0) {
        sc.test = config.test;
        // A test batch holds no more samples than the training microbatches in flight,
        // whose memory the plan counts on every stage (a batch of 241 took a capped
        // transformer stage past its cap), and keeps its largest tensor within 32 MiB.
        const int64_t inFlight = config.run.microbatch * (as.stages + 1);
        sc.evaluationBatch = std::min(train::evaluationBatch(config.run.model), std::max<int64_t>(16, inFlight));
        sc.onEvaluated = [this](const train::EvaluationResult &r) { evaluated(r); };
    }
    runtime =
        std::make_unique<train::StageRuntime>(sc, *transport, *config.gate, as.stage == 0 ? config.train : nullptr);
    checkpointRun = swarmCheckpointRun(config.run.runId, as.firstLayer, as.lastLayer);
    writer = std::make_unique<store::CheckpointWriter>(*config.checkpoints, checkpointRun, config.keepCheckpoints);
}

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

void AssignedStage::Impl::noteProgress(int64_t version, bool force)
{
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - lastRateTime).count();
    StageProgress copy;
    {
        std::lock_guard lock(mutex);
        progress.step = version;
        const int64_t samples = (version - lastRateStep) * config.run.microbatch * config.run.accumulation;
        if (dt >= 1.0) {
            const double rate = double(samples) / dt;
            progress.samplesPerSecond =
                progress.samplesPerSecond > 0 ? 0.7 * progress.samplesPerSecond + 0.3 * rate : rate;
            progress.samplesTotal += samples;
            const double own = runtime->ownSeconds();
            if (const double spent = own - lastOwnSeconds; spent > 0.05 && samples > 0) {
                const double ownRate = double(samples) / spent;
                progress.ownSamplesPerSecond =
                    progress.ownSamplesPerSecond > 0 ? 0.7 * progress.ownSamplesPerSecond + 0.3 * ownRate : ownRate;
            }
            lastOwnSeconds = own;
            lastRateTime = now;
            lastRateStep = version;
        }
        if (!force && std::chrono::duration<double>(now - lastReport).count() < 0.5)
            return;
        lastReport = now;
        progress.bytesSent = mesh.totals().bytesSent;
        progress.ringBytesSent = 0;
        for (const auto &r : rings)
            progress.ringBytesSent += r.links->bytesSent();
        if (const double loss = runtime->lastLoss(); loss > 0)
            progress.loss = loss;
        progress.staleness = runtime->meanStaleness();
        progress.window = runtime->window();
        copy = progress;
    }
    if (callbacks.progress)
        callbacks.progress(copy);
}

std::vector<AssignedStage::Impl::RingChange> AssignedStage::Impl::averageRingsOf(std::vector<NamedTensor> snapshot,
                                                                                 int64_t round)
{
    std::vector<RingJob> jobs;
    for (auto &ring : rings) {
        if (ring.alone() || ring.previousFinished)
            continue;
        if (!mesh.isUp(ring.next) || !mesh.isUp(ring.previous)) {
            std::lock_guard lock(mutex);
            ++progress.ringSkipped;
            continue;
        }
        RingJob job;
        job.ring = &ring;
        for (const auto &p : snapshot)
            if (const size_t l = swarm::layerOfParameter(p.name); l >= ring.ref.firstLayer && l < ring.ref.lastLayer)
                job.parameters.push_back(p);
        jobs.push_back(std::move(job));
    }
    snapshot.clear();
    averageAtOnce(jobs, round, config.ringPrecision);

    std::vector<RingChange> changes;
    for (auto &job : jobs) {
        StageRing &ring = *job.ring;
        RingChange change{std::move(job.parameters), {}};
        auto outcome = std::move(job.outcome);
        if (outcome.result.rejected) { // poison stops here; the previous member sent it
            if (config.complaints)
                config.complaints->refused(ring.previous);
            std::lock_guard lock(mutex);
            ++progress.ringRejected;
            log::warning("swarm", "averaging layers " + std::to_string(ring.ref.firstLayer) + "-" +
                                      std::to_string(ring.ref.lastLayer - 1) + ": " + outcome.result.rejection +
                                      (outcome.result.complete ? "; used this stage's own values in their place" : "") +
                                      " (from peer " + ring.previous.substr(0, 12) + ")");
        }
        if (!outcome.result.complete) {
            ring.outer.reset(); // the members now differ: the next round starts from its average
            std::lock_guard lock(mutex);
            ++progress.ringSkipped;
            const std::string layers =
                std::to_string(ring.ref.firstLayer) + "-" + std::to_string(ring.ref.lastLayer - 1);
            if (outcome.result.previousFinished) { // expected near the end: said once, not warned of
                ring.previousFinished = true;
                log::info("swarm", "averaging layers " + layers + ": peer " + ring.previous.substr(0, 12) +
                                       " has trained to the end; this stage trains its last steps without that ring");
            } else {
                log::warning("swarm", "averaging layers " + layers + " skipped: " + outcome.result.error);
            }
            continue;
        }
        // Plain averaging too: the step keeps the average as the anchor of the next round.
        const auto stepped = ring.outer.step(swarm::flattenParameters(outcome.parameters));
        swarm::unflattenParameters(stepped, outcome.parameters);
        change.after = std::move(outcome.parameters);
        changes.push_back(std::move(change));
        std::lock_guard lock(mutex);
        ++progress.ringRounds;
    }
    return changes;
}

void AssignedStage::Impl::applyChanges(const std::vector<RingChange> &changes)
{
    if (changes.empty())
        return;
    const auto current = runtime->parameters();
    for (const auto &c : changes) {
        try {
            runtime->setParameters(swarm::movedByAveraging(current, c.before, c.after));
        } catch (const Error &e) {
            log::warning("swarm", std::string("an averaging round was not applied: ") + e.what());
        }
    }
}

// The weights a round agreed on are what the stage's tests measure until the next
// (StageRuntime::setConsensus): the swarm's model, where each cluster's own drifts from
// it for the interval's steps. Layers whose ring did not complete, or a stage in no ring
// with another cluster, test their current weights.
void AssignedStage::Impl::noteConsensus(std::vector<RingChange> changes, int64_t version)
{
    std::vector<NamedTensor> agreed;
    for (auto &c : changes)
        std::move(c.after.begin(), c.after.end(), std::back_inserter(agreed));
    try {
        runtime->setConsensus(agreed, version);
    } catch (const Error &e) {
        runtime->dropConsensus();
        log::warning("swarm", std::string("tests take the current weights: ") + e.what());
    }
}

void AssignedStage::Impl::averageRings(int64_t round)
{
    collectAveraging(true);
    const int64_t version = runtime->version();
    // Nothing trained since the snapshot: the average itself, exactly (adding the change
    // would round differently on each member).
    auto changes = averageRingsOf(runtime->parameters(), round);
    for (const auto &c : changes)
        runtime->setParameters(c.after);
    noteConsensus(std::move(changes), version);
}

void AssignedStage::Impl::startAveraging(int64_t round)
{
    if (std::all_of(rings.begin(), rings.end(), [](const StageRing &r) { return r.alone(); })) {
        runtime->dropConsensus();
        return;
    }
    averagingDone = false;
    averagingVersion = runtime->version();
    averagingThread = std::thread([this, snapshot = runtime->parameters(), round]() mutable {
        try {
            averagingChanges = averageRingsOf(std::move(snapshot), round);
        } catch (const std::exception &e) { // a malformed parameter name, say: this round only
            log::warning("swarm", std::string("an averaging round failed: ") + e.what());
        }
        averagingDone = true;
    });
}

void AssignedStage::Impl::collectAveraging(bool wait)
{
    if (!averagingThread.joinable() || (!wait && !averagingDone))
        return;
    averagingThread.join();
    auto changes = std::exchange(averagingChanges, {});
    applyChanges(changes);
    noteConsensus(std::move(changes), averagingVersion);
}

void AssignedStage::Impl::takeRingChanges()
{
    {
        std::lock_guard lock(ringsMutex);
        if (!pendingRings)
            return;
    }
    collectAveraging(true); // a round in flight used the old members (cancelled where they changed)
    std::lock_guard lock(ringsMutex);
    if (closing)
        return;
    const auto fresh = std::exchange(pendingRings, std::nullopt);
    for (auto &ring : rings) {
        for (const auto &r : *fresh)
            if (r.ringId == ring.ref.ringId && !(r == ring.ref)) {
                ring.follow(r);
                ring.outer.reset(); // other members: the next round starts from their average
            }
        // Also when the members came back before the change was taken: the cancel stands.
        if (cancelledRings.erase(ring.ref.ringId))
            ring.links->reset();
    }
}

void AssignedStage::Impl::onUpdate(int64_t version)
{
    stepsDone = version;
    const auto &run = config.run;
    runtime->setLearningRate(swarm::scheduledLearningRate(run.optimizer, version, run.totalSteps));
    takeRingChanges();
    collectAveraging(false); // a round that finished meanwhile
    if (run.averagingInterval > 0 && version % run.averagingInterval == 0) {
        if (run.overlapAveraging) {
            collectAveraging(true); // one round in flight at most, so the ring's rounds stay in step
            startAveraging(version / run.averagingInterval);
        } else {
            averageRings(version / run.averagingInterval);
        }
        publishSnapshot(version);
    }
    // Not while the previous one is still being written: two copies of the state at
    // once would be more than the plan counts.
    if (config.checkpointEvery > 0 && version % config.checkpointEvery == 0 &&
        Clock::now() - lastCheckpoint >= config.checkpointInterval && !writer->busy()) {
        lastCheckpoint = Clock::now();
        writer->submit(runtime->state());
    }
    if (root() && config.evaluateEvery > 0 && version % config.evaluateEvery == 0 && version < run.totalSteps)
        runtime->requestEvaluation();
    noteProgress(version, false);
}

// On the stage thread, inside the run (StageConfig::onFinishing): the last step is done.
void AssignedStage::Impl::finish()
{
    {
        std::lock_guard lock(mutex);
        phase = Phase::Finishing;
    }
    const auto &run = config.run;
    // One last averaging round, so that every cluster ends with the same weights.
    takeRingChanges();
    if (run.averagingInterval > 0)
        averageRings(run.totalSteps / run.averagingInterval + 1);
    // No more rounds here: a ring member still behind hears so at once in its next one.
    for (auto &ring : rings)
        ring.links->finish();
    publishSnapshot(finalMarker());
    writer->submit(runtime->state());
    writer->flush();
    noteProgress(runtime->version(), true);
}

void AssignedStage::Impl::evaluated(const train::EvaluationResult &r)
{
    if (r.refused) {
        // The tally comes from the last stage; with no stage between, that is the next
        // one, which alone can be blamed (any stage between may have altered it).
        const std::string &next = a().next.nodeId;
        log::warning("swarm", "stage " + std::to_string(a().stage) + ": refused the test tally of peer " +
                                  next.substr(0, 12) + ": " + r.failure);
        if (config.complaints && a().stages == 2)
            config.complaints->refused(next);
    }
    if (!r.failure.empty()) {
        say(std::string(r.final ? "final " : "") + "evaluation skipped: " + r.failure);
        return;
    }
    {
        std::lock_guard lock(mutex);
        progress.testAccuracy = r.accuracy();
    }
    char text[200];
    // "the swarm's model": the consensus every cluster held after that step's round, so a
    // reader may take any cluster's figure for the swarm's (bench_wan does).
    std::snprintf(text, sizeof text, "%s cluster %d at step %lld: test accuracy %.2f%%, test loss %.4f%s",
                  r.final ? "done:" : "evaluated", a().cluster + 1, (long long)r.version, r.accuracy() * 100, r.loss(),
                  r.consensus ? " (the swarm's model)" : "");
    say(text);
}

void AssignedStage::Impl::stageMain()
{
    const int64_t perStep = std::max<int64_t>(1, config.run.accumulation);
    const int64_t microbatches = root() ? std::max<int64_t>(0, (config.run.totalSteps - runtime->version()) * perStep)
                                        : std::numeric_limits<int64_t>::max() / 4;
    stepsDone = runtime->version();
    const train::StageRunResult result = runtime->run(microbatches);
    {
        std::lock_guard lock(mutex);
        progress.staleness = result.metrics.meanStaleness();
        progress.window = result.metrics.window;
        const double wall = result.metrics.busySeconds + result.metrics.waitSeconds;
        progress.busyFraction = wall > 0 ? result.metrics.busySeconds / wall : 0;
        if (result.metrics.lastLoss > 0)
            progress.loss = result.metrics.lastLoss;
    }
    settle(result);
    if (result.stop.kind != train::StopKind::Finished)
        say("stage run stopped: " + result.stop.reason);
    running = false;
}

// What the end of a run means for the phase: finishing touches after the last step;
// a checkpoint and a wait (or a failure count) after a stop.
void AssignedStage::Impl::settle(const train::StageRunResult &result)
{
    switch (result.stop.kind) {
    case train::StopKind::Finished: {
        std::lock_guard lock(mutex);
        phase = Phase::Finished;
        lastStop = "the run is complete";
        break;
    }
    case train::StopKind::Cancelled: {
        writer->submit(runtime->state()); // keep what this run did
        std::lock_guard lock(mutex);
        phase = Phase::Waiting;
        lastStop = result.stop.reason;
        break;
    }
    case train::StopKind::Failed: {
        writer->submit(runtime->state());
        std::lock_guard lock(mutex);
        phase = Phase::Failed;
        ++failures;
        lastStop = result.stop.reason;
        break;
    }
    }
}

AssignedStage::AssignedStage(PeerMesh &mesh, AssignedStageConfig config, Callbacks callbacks)
    : d(std::make_unique<Impl>(mesh, std::move(config), std::move(callbacks)))
{
    if (!d->config.gate || !d->config.checkpoints)
        throw Error("assigned stage: missing gate or checkpoint store");
    if (d->a().stage == 0 && (!d->config.train || !d->config.test))
        throw Error("assigned stage: a root stage needs its training and test data");
    d->buildLinks();
    d->buildRuntime();
}

void AssignedStage::restore()
{
    if (d->ready)
        return;
    d->restore();
    d->ready = true;
}

AssignedStage::~AssignedStage()
{
    d->transport->abort({train::StopKind::Cancelled, d->a().stage, "this node's assignment changed or it stops"});
    {
        std::lock_guard lock(d->ringsMutex);
        d->closing = true;
    }
    for (auto &r : d->rings)
        r.links->cancel();
    if (d->stageThread.joinable())
        d->stageThread.join();
    if (d->averagingThread.joinable()) // its links are cancelled: it gives up at once
        d->averagingThread.join();
    if (d->ready) // never over a checkpoint with the run's initial weights
        d->writer->submit(d->runtime->state());
    d->writer->flush();
}

void AssignedStage::deliver(const std::string &peer, net::Message &&message)
{
    d->router->deliver(peer, std::move(message));
}

void AssignedStage::linkChanged(const std::string &peer, bool up) { d->router->linkChanged(peer, up); }

void AssignedStage::writable(const std::string &peer) { d->router->writable(peer); }

void AssignedStage::poke()
{
    if (!d->ready)
        return;
    {
        std::lock_guard lock(d->mutex);
        if (d->phase != Phase::Waiting && d->phase != Phase::Failed)
            return;
    }
    if (d->running || !d->transport->neighboursUp())
        return;
    if (d->stageThread.joinable())
        d->stageThread.join();
    {
        std::lock_guard lock(d->mutex);
        d->phase = Phase::Training;
    }
    // Here, not on the new thread: an abort that comes after poke() returns (this node
    // stopping, a neighbour's link lost) must not be cleared by the run starting late.
    d->transport->beginRun();
    d->running = true;
    d->stageThread = std::thread([this] { d->stageMain(); });
}

void AssignedStage::updateRings(const std::vector<coord::RingRef> &rings)
{
    std::lock_guard lock(d->ringsMutex);
    d->pendingRings = rings;
    // A round waiting on a member that left ends now rather than at its timeout; the
    // stage thread resets the links when it takes the change.
    for (auto &ring : d->rings)
        for (const auto &r : rings)
            if (r.ringId == ring.ref.ringId && !(r == ring.ref)) {
                ring.links->cancel();
                d->cancelledRings.insert(r.ringId);
            }
}

int AssignedStage::failureCount() const
{
    std::lock_guard lock(d->mutex);
    return d->failures;
}

AssignedStage::Phase AssignedStage::phase() const
{
    std::lock_guard lock(d->mutex);
    return d->phase;
}

std::string AssignedStage::lastStop() const
{
    std::lock_guard lock(d->mutex);
    return d->lastStop;
}

StageProgress AssignedStage::progress() const
{
    std::lock_guard lock(d->mutex);
    return d->progress;
}

const coord::Assignment &AssignedStage::assignment() const { return d->config.assignment; }

} // namespace rookery::participant
