// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/device/governor_settings.h"
#include "engine/train/trainer.h"

namespace rookery::device {
class Governor;
}

namespace rookery::host {

/// Settings of a single-machine training run (rookery-node's local mode).
struct WholeModelSettings
{
    std::string model = "mlp";
    std::string optimizer = "sgd";
    double learningRate = 0.05;
    double momentum = 0.9;
    double weightDecay = 0.0;
    int64_t batchSize = 64;
    uint64_t seed = 1;
    int64_t steps = 3000;          ///< train until this many steps in total
    int64_t checkpointEvery = 500; ///< steps; 0 = only at the end and on stop
    int keepCheckpoints = 3;
    int64_t evalEvery = 1000;      ///< steps; 0 = only at the end
    int threads = 0;               ///< cores for the math; 0 = all
    int64_t trainSamples = 0;      ///< use the first N training samples; 0 = all
    bool fresh = false;            ///< ignore existing checkpoints of this run
    std::string run = "local";     ///< checkpoints are kept per run name
    std::filesystem::path dataDir; ///< holds rookery.db
    std::filesystem::path datasetDir;
    device::GovernorSettings governor; ///< limits, schedule, idle and battery rules
};

struct WholeModelProgress
{
    int64_t step = 0;
    int64_t totalSteps = 0;
    double loss = 0;             ///< smoothed training loss
    double samplesPerSecond = 0; ///< smoothed
    double etaSeconds = -1;      ///< -1 while unknown
    int64_t samplesTotal = 0;    ///< samples trained by this run() so far
    std::optional<train::EvalMetrics> lastEval;
};

struct WholeModelSummary
{
    int64_t startStep = 0; ///< > 0 when resumed from a checkpoint
    int64_t endStep = 0;
    bool stopped = false;   ///< stopped early: on request, or by the governor
    std::string stopReason; ///< why, when stopped: "stopped on request", the governor's reason
    std::optional<train::EvalMetrics> finalEval;
    double seconds = 0;
};

/// One training run on this machine: loads Fashion-MNIST, resumes from the run's
/// newest checkpoint unless told not to, trains, evaluates, and checkpoints every N
/// steps, at the end and when asked to stop.
///
/// Every step passes the resource governor first (device/governor.h): it may hold the
/// run (paused, schedule, battery, idle rules), space steps out (CPU cap), or stop it
/// (memory cap), in which case the run checkpoints and returns as stopped.
///
/// Thread safety: run() on one thread; the callbacks are called on that thread,
/// except checkpoint callbacks, which come from the store's writer thread, and
/// governor messages, which come from whichever thread changed the governor's state.
/// governor() may be used from any thread (pause, resume, snooze, new settings).
class WholeModelRun
{
public:
    struct Callbacks
    {
        std::function<void(const std::string &)> message;
        std::function<void(const WholeModelProgress &)> progress; ///< about twice a second
        std::function<void(int64_t step, const train::EvalMetrics &)> evaluated;
        std::function<void(int64_t step)> checkpointStarted;
        std::function<void(int64_t step)> checkpointSaved;
    };

    /// Throws rookery::Error for invalid governor settings.
    WholeModelRun(WholeModelSettings settings, Callbacks callbacks);
    ~WholeModelRun();

    /// Trains until `steps` or until *stop becomes true (checked between steps; safe to
    /// set from a signal handler). Throws rookery::Error for bad data, settings or
    /// database, before any training and without changing saved state.
    WholeModelSummary run(const std::atomic<bool> *stop = nullptr);

    device::Governor &governor() { return *m_governor; }

private:
    void say(const std::string &text) const;

    WholeModelSettings m_settings;
    Callbacks m_callbacks;
    std::unique_ptr<device::Governor> m_governor;
};

/// The trainer configuration the settings describe (validates them).
train::TrainerConfig trainerConfigFor(const WholeModelSettings &settings);

} // namespace rookery::host
