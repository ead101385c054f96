// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/host.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/device/governor.h"
#include "engine/host/contribution_meter.h"
#include "engine/host/node_engine.h"
#include "engine/host/training_job.h"
#include "engine/store/checkpoint_store.h"

namespace rookery::host {

inline const std::string kNoConsent = "consent has not been given: nothing computes until you agree";

/// The engine behind NodeEngine's commands: the engine thread's loop, its state and
/// the running job.
///
/// Thread safety: the members under "Shared" under `mutex`; the rest on the engine
/// thread only (run() and what it calls, and the commands it runs).
struct NodeEngine::Impl
{
    using JobFactory = std::function<std::unique_ptr<TrainingJob>(TrainingJob::Events)>;
    struct PendingStart
    {
        std::function<void()> start;
        EngineApi::ResultCallback done;
    };

    explicit Impl(NodeEngineSettings s)
        : settings(std::move(s))
    {
        governor.setSettings(settings.governor); // checked by the host; throws rookery::Error if not
    }

    const NodeEngineSettings settings;
    device::Governor governor; // the policy for every job: settings, pause and snooze

    // Shared, under `mutex`.
    mutable std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> queue;
    bool quit = false;
    EngineSnapshot published;
    std::deque<EngineEvent> events;
    std::function<void()> notifier;
    std::atomic<bool> localActive{false}; // a WholeModelRun's governor speaks for itself

    // The engine thread's own.
    EngineSnapshot state;
    std::unique_ptr<TrainingJob> job;
    uint64_t jobGeneration = 0;
    EngineApi::ResultCallback startDone;
    std::vector<EngineApi::ResultCallback> stopWaiters;
    std::optional<PendingStart> pending; // starts once the running job has stopped
    std::unique_ptr<store::CheckpointStore> checkpoints;
    std::unique_ptr<ContributionMeter> meter;
    bool profileMeasured = false;
    bool checkpointsDirty = true;
    std::chrono::steady_clock::time_point nextCheckpointRefresh{};
    std::string lastErrorSaid;

    std::thread thread;

    void post(std::function<void()> fn);
    void say(EngineEvent::Level level, const std::string &area, const std::string &text);
    /// Shows `text` as the snapshot's lastError, and logs it once.
    void noteError(const std::string &area, const std::string &text);
    /// A new sequence only when something changed; the notifier when asked or events wait.
    void publish(bool notify);
    /// Opened on first use (the data directory may not exist before).
    store::CheckpointStore &store();

    void run();
    void start();
    void tick();
    void ensureProfile();
    void refreshCheckpoints();
    void whenIdle(std::function<void()> start, EngineApi::ResultCallback done);
    void begin(const JobFactory &make, EngineApi::ResultCallback done);
    TrainingJob::Events jobEvents(uint64_t generation);
    void onJobFinished(uint64_t generation, const std::string &outcome, bool failed);
    void beginLocal(const std::string &run, EngineApi::ResultCallback done);
    void beginFromCheckpoint(const store::CheckpointInfo &info, EngineApi::ResultCallback done);
    void beginSwarm(const std::string &address, int demoNodes, EngineApi::ResultCallback done);
};

} // namespace rookery::host
