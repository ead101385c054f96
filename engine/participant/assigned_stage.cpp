// SPDX-License-Identifier: GPL-3.0-or-later
// AssignedStage: building its links and runtime, its thread and the runs it trains,
// progress and checkpoints, the end of the run, and the calls from the node. Its start
// (checkpoint, layers kept or taken over) is in assigned_stage_restore.cpp, its averaging
// in assigned_stage_rings.cpp.
#include "engine/participant/assigned_stage.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <utility>

#include "engine/common/error.h"
#include "engine/participant/assigned_stage_state.h"
#include "engine/participant/net_ring_links.h"
#include "engine/participant/peer_complaints.h"
#include "engine/participant/peer_mesh.h"
#include "engine/store/checkpoint_store.h"
#include "engine/swarm/learning_rate_schedule.h"
#include "engine/swarm/outer_optimizer.h"
#include "engine/swarm/ring_averaging.h"
#include "engine/train/evaluate.h"

namespace rookery::participant {

std::string swarmCheckpointRun(const std::string &runId, size_t firstLayer, size_t lastLayer)
{
    return "swarm:" + runId + ":layers " + std::to_string(firstLayer) + "-" + std::to_string(lastLayer);
}

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
