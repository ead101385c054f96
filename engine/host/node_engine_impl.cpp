// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/node_engine_impl.h"

#include <algorithm>
#include <utility>

#include "engine/common/paths.h"
#include "engine/common/wall_clock.h"
#include "engine/device/profile_probe.h"
#include "engine/device/profile_service.h"
#include "engine/host/engine_views.h"
#include "engine/host/swarm_job.h"
#include "engine/host/whole_model_job.h"

namespace rookery::host {
namespace {

using Clock = std::chrono::steady_clock;
using Level = EngineEvent::Level;
using ResultCallback = EngineApi::ResultCallback;

constexpr size_t kMaxEvents = 1000;
constexpr auto kCheckpointRefresh = std::chrono::seconds(5);

int64_t newestStep(store::CheckpointStore &store, const std::string &run)
{
    int64_t step = 0;
    for (const auto &c : store.list(run))
        step = std::max(step, c.step);
    return step;
}

} // namespace

void NodeEngine::Impl::post(std::function<void()> fn)
{
    {
        std::lock_guard lock(mutex);
        queue.push_back(std::move(fn));
    }
    wake.notify_all();
}

void NodeEngine::Impl::say(Level level, const std::string &area, const std::string &text)
{
    std::lock_guard lock(mutex);
    events.push_back({nowMs(), level, area, text});
    while (events.size() > kMaxEvents)
        events.pop_front();
}

void NodeEngine::Impl::noteError(const std::string &area, const std::string &text)
{
    state.lastError = text;
    if (std::exchange(lastErrorSaid, text) != text)
        say(Level::Error, area, text);
}

void NodeEngine::Impl::publish(bool notify)
{
    std::function<void()> call;
    {
        std::lock_guard lock(mutex);
        state.sequence = published.sequence;
        if (!(state == published)) {
            ++state.sequence;
            published = state;
        }
        if (notify || !events.empty())
            call = notifier;
    }
    if (call)
        call();
}

store::CheckpointStore &NodeEngine::Impl::store()
{
    if (!checkpoints) {
        ensurePrivateDirectory(settings.dataDir);
        checkpoints = std::make_unique<store::CheckpointStore>(settings.dataDir / "rookery.db");
    }
    return *checkpoints;
}

// ---- the engine thread ----

void NodeEngine::Impl::run()
{
    // This thread stays at the UI's priority: it only publishes and files, and the
    // capability profile it measures at consent is the machine's speed, which a
    // measurement at nice 19 on a busy machine would understate many times over. Each
    // job lowers its own threads.
    start();
    auto nextTick = Clock::now();
    std::unique_lock lock(mutex);
    while (!quit) {
        wake.wait_until(lock, nextTick, [this] { return quit || !queue.empty(); });
        while (!queue.empty() && !quit) {
            auto fn = std::move(queue.front());
            queue.pop_front();
            lock.unlock();
            fn();
            lock.lock();
        }
        if (!quit && Clock::now() >= nextTick) {
            lock.unlock();
            tick();
            lock.lock();
            nextTick = Clock::now() + settings.publishInterval;
        }
    }
    lock.unlock();
    if (job) {
        job->requestStop();
        job.reset(); // checkpoints and joins
    }
    meter.reset(); // saves the last figures
    for (auto &done : std::exchange(stopWaiters, {}))
        done("");
}

void NodeEngine::Impl::start()
{
    state.assignment.mode = "idle";
    governor.setObserver([this](const device::GovernorStatus &s) {
        if (!localActive)
            say(Level::Info, "governor", s.reason);
    });
    std::unique_ptr<store::ContributionStore> contributions;
    try {
        ensurePrivateDirectory(settings.dataDir);
        // What the machine is, without measuring anything: that waits for consent.
        state.device = deviceView(device::readHardwareProfile(settings.dataDir), false);
        contributions = std::make_unique<store::ContributionStore>(settings.dataDir / "rookery.db");
    } catch (const std::exception &e) {
        noteError("store", e.what());
    }
    try {
        meter = std::make_unique<ContributionMeter>(std::move(contributions), settings.contributionFlushInterval);
    } catch (const std::exception &e) {
        noteError("store", e.what());
        meter = std::make_unique<ContributionMeter>(nullptr);
    }
    state.contribution = meter->view();
    refreshCheckpoints();
    publish(true);
}

void NodeEngine::Impl::tick()
{
    JobView v;
    if (job)
        v = job->view();
    try {
        meter->update(v.samplesDone, job && v.computing);
    } catch (const std::exception &e) {
        noteError("store", e.what());
    }
    state.contribution = meter->view();
    if (job) {
        state.assignment = v.assignment;
        state.training = v.training;
        state.peers = v.peers;
        state.links = v.links;
        state.join = v.join; // kept after the job ends: a failed join says why
    }
    state.governor = job && v.governor ? *v.governor : governorView(governor.status());
    auto &g = state.governor;
    if (!job) {
        g.state = "stopped";
        g.reason = state.consentGiven ? "not training" : "waiting for consent";
    } else if (!v.waiting.empty() && (g.state == "running" || g.state == "throttled")) {
        g.state = "waiting";
        g.reason = v.waiting;
    }
    if (checkpointsDirty || Clock::now() >= nextCheckpointRefresh)
        refreshCheckpoints();
    publish(false);
}

void NodeEngine::Impl::ensureProfile()
{
    if (profileMeasured || !settings.measureAtConsent)
        return;
    say(Level::Info, "device", "measuring this computer's speed (once; a few seconds)");
    publish(true);
    try {
        const auto p = device::loadCapabilityProfile(settings.dataDir, false);
        state.device = deviceView(p.profile, true);
        profileMeasured = true;
        say(Level::Info, "device", std::string(p.measured ? "measured: " : "capability profile ") + p.why);
    } catch (const std::exception &e) {
        noteError("device", std::string("cannot measure this computer: ") + e.what());
    }
}

void NodeEngine::Impl::refreshCheckpoints()
{
    checkpointsDirty = false;
    nextCheckpointRefresh = Clock::now() + kCheckpointRefresh;
    try {
        state.checkpoints.clear();
        for (const auto &info : store().list())
            state.checkpoints.push_back(checkpointView(info));
    } catch (const std::exception &e) {
        noteError("store", e.what());
    }
}

// ---- jobs ----

void NodeEngine::Impl::whenIdle(std::function<void()> startFn, ResultCallback done)
{
    if (!job) {
        startFn();
        return;
    }
    if (pending)
        pending->done("another start was asked for before this one began");
    pending = PendingStart{std::move(startFn), std::move(done)};
    say(Level::Info, "train", "stopping the current training first (it saves a checkpoint)");
    job->requestStop();
}

TrainingJob::Events NodeEngine::Impl::jobEvents(uint64_t generation)
{
    TrainingJob::Events e;
    e.say = [this](Level level, const std::string &area, const std::string &text) { say(level, area, text); };
    e.started = [this, generation](const std::string &error) {
        post([this, generation, error] {
            if (generation == jobGeneration && startDone)
                std::exchange(startDone, nullptr)(error);
        });
    };
    e.finished = [this, generation](const std::string &outcome, bool failed) {
        post([this, generation, outcome, failed] { onJobFinished(generation, outcome, failed); });
    };
    e.checkpointSaved = [this] { post([this] { checkpointsDirty = true; }); };
    return e;
}

void NodeEngine::Impl::begin(const JobFactory &make, ResultCallback done)
{
    governor.resume(); // new work starts unpaused
    const uint64_t generation = ++jobGeneration;
    try {
        job = make(jobEvents(generation));
    } catch (const std::exception &e) {
        localActive = false;
        done(e.what());
        return;
    }
    startDone = std::move(done);
    meter->jobStarted();
    state.running = true;
    state.lastError.clear();
    lastErrorSaid.clear();
    state.training = {};
    state.join.clear();
    publish(true);
}

void NodeEngine::Impl::onJobFinished(uint64_t generation, const std::string &outcome, bool failed)
{
    if (generation != jobGeneration || !job)
        return;
    try {
        const JobView last = job->view();
        meter->update(last.samplesDone, false); // the last steps count too
        state.join = last.join;
        meter->flush();
    } catch (const std::exception &e) {
        noteError("store", e.what());
    }
    job.reset();
    localActive = false;
    state.running = false;
    state.assignment = {};
    state.assignment.mode = "idle";
    state.peers.clear();
    state.links.clear();
    state.training.samplesPerSecond = 0;
    if (failed)
        noteError("train", "training stopped: " + outcome);
    else
        say(Level::Info, "train", "training ended: " + outcome);
    if (settings.console.ended)
        settings.console.ended(outcome, failed);
    checkpointsDirty = true;
    for (auto &done : std::exchange(stopWaiters, {}))
        done(failed ? outcome : std::string());
    if (auto next = std::exchange(pending, std::nullopt))
        next->start();
    tick();
    publish(true);
}

void NodeEngine::Impl::beginLocal(const std::string &run, ResultCallback done)
{
    WholeModelSettings s = settings.local;
    s.run = run;
    s.dataDir = settings.dataDir;
    s.datasetDir = settings.datasetDir;
    s.governor = governor.settings();
    int64_t from = 0;
    try {
        from = s.fresh ? 0 : newestStep(store(), run);
    } catch (const std::exception &e) {
        done(e.what());
        return;
    }
    if (from >= s.steps && settings.extendFinishedRuns) {
        s.steps = from + settings.local.steps;
        say(Level::Info, "train",
            "run '" + run + "' is at step " + std::to_string(from) + ": training " +
                std::to_string(settings.local.steps) + " steps further");
    }
    localActive = true;
    begin(
        [&](TrainingJob::Events e) {
            return std::make_unique<WholeModelJob>(s, from, settings.console, settings.lowerJobPriority, std::move(e));
        },
        std::move(done));
}

void NodeEngine::Impl::beginFromCheckpoint(const store::CheckpointInfo &info, ResultCallback done)
{
    std::string run = info.run;
    try {
        if (info.step < newestStep(store(), info.run)) {
            // WholeModelRun resumes a run's newest checkpoint: branch off, keeping the newer ones.
            run = info.run + " from step " + std::to_string(info.step);
            store().save(run, store().load(info.id).state, settings.local.keepCheckpoints);
            say(Level::Info, "store",
                "resuming run '" + info.run + "' at step " + std::to_string(info.step) + " as run '" + run +
                    "'; the run's newer checkpoints stay");
        }
    } catch (const std::exception &e) {
        done(e.what());
        return;
    }
    beginLocal(run, std::move(done));
}

void NodeEngine::Impl::beginSwarm(const std::string &address, int demoNodes, ResultCallback done)
{
    SwarmJobSettings js;
    js.node = settings.swarm;
    js.node.coordinator = address;
    js.node.dataDir = settings.dataDir;
    js.node.datasetDir = settings.datasetDir;
    js.node.governor = governor.settings();
    if (demoNodes > 0) {
        launcher::SwarmLauncherSettings demo;
        demo.nodes = demoNodes - 1; // this node is one of them
        demo.clusterSize = settings.demo.clusterSize;
        demo.workDir = settings.dataDir / "demo-swarm";
        demo.binDir = settings.binDir;
        demo.datasetDir = settings.datasetDir;
        demo.coordinatorArgs = settings.demo.coordinatorArgs;
        // Plan once every node is here: the children measure their speed first, at nice
        // 19, which on a busy machine takes longer than any fixed wait.
        demo.coordinatorArgs.insert(demo.coordinatorArgs.end(), {"--expect-nodes", std::to_string(demoNodes)});
        demo.nodeArgs = settings.demo.nodeArgs;
        js.demo = std::move(demo);
        js.node.bindAddress = "127.0.0.1"; // the demo's traffic never leaves this machine
        js.node.publicAddress.clear();
    }
    js.statusPort = settings.statusPort;
    js.console = settings.console;
    js.lowerPriority = settings.lowerJobPriority;
    localActive = false;
    begin([&](TrainingJob::Events e) { return std::make_unique<SwarmJob>(std::move(js), std::move(e)); },
          std::move(done));
}

} // namespace rookery::host
