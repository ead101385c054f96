// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/whole_model_run.h"

#include <chrono>
#include <stop_token>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/device/governor.h"
#include "engine/model/model_zoo.h"
#include "engine/store/checkpoint_store.h"
#include "engine/store/checkpoint_writer.h"

namespace rookery::host {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Exponential moving average that starts at the first sample.
struct Smoothed
{
    double value = 0;
    bool primed = false;
    void add(double x, double weight = 0.05)
    {
        value = primed ? value + weight * (x - value) : x;
        primed = true;
    }
};

// What training `config` adds to resident memory, roughly: weights, gradients and
// optimizer state, plus what the forward keeps for backward, the outputs' gradients and the
// input batch, with half again for allocator slack and temporaries.
uint64_t trainingBytes(const train::TrainerConfig &config)
{
    const int slots = config.optimizer.kind == train::OptimizerKind::AdamW ? 2 : 1;
    uint64_t bytes = uint64_t(model::parameterCount(config.model)) * 4 * uint64_t(2 + slots);
    for (const auto &cost : model::layerCosts(config.model, config.batchSize))
        bytes += uint64_t(cost.savedBytes) + uint64_t(cost.activationBytes);
    bytes += uint64_t(config.batchSize) * uint64_t(config.model.input.elements()) * 4;
    return bytes + bytes / 2;
}

} // namespace

train::TrainerConfig trainerConfigFor(const WholeModelSettings &s)
{
    train::TrainerConfig c;
    c.model = model::modelByName(s.model);
    c.optimizer.kind = train::optimizerKindFromName(s.optimizer);
    c.optimizer.learningRate = s.learningRate;
    c.optimizer.momentum = s.momentum;
    c.optimizer.weightDecay = s.weightDecay;
    train::validate(c.optimizer);
    c.batchSize = s.batchSize;
    c.seed = s.seed;
    if (s.steps < 1)
        throw Error("--steps must be at least 1");
    if (s.keepCheckpoints < 1)
        throw Error("--keep must be at least 1");
    return c;
}

WholeModelRun::WholeModelRun(WholeModelSettings settings, Callbacks callbacks)
    : m_settings(std::move(settings))
    , m_callbacks(std::move(callbacks))
{
    device::GovernorEnvironment env = device::systemEnvironment();
    if (m_settings.threads > 0) // --threads is the machine as far as this run is concerned
        env.cores = std::min(env.cores, m_settings.threads);
    m_governor = std::make_unique<device::Governor>(m_settings.governor, std::move(env));
}

WholeModelRun::~WholeModelRun() = default;

void WholeModelRun::say(const std::string &text) const
{
    if (m_callbacks.message)
        m_callbacks.message(text);
}

WholeModelSummary WholeModelRun::run(const std::atomic<bool> *stop)
{
    const auto &s = m_settings;
    train::TrainerConfig config = trainerConfigFor(s);

    // Everything that can fail on bad input happens before training starts.
    auto train = std::make_shared<data::ImageDataset>(data::loadFashionMnist(s.datasetDir, data::Split::Train));
    if (s.trainSamples > 0)
        *train = data::headOf(*train, s.trainSamples);
    const data::ImageDataset test = data::loadFashionMnist(s.datasetDir, data::Split::Test);
    ensurePrivateDirectory(s.dataDir);
    store::CheckpointStore checkpoints(s.dataDir / "rookery.db");

    std::optional<store::Checkpoint> resume;
    if (!s.fresh)
        resume = checkpoints.loadNewest(s.run);
    if (resume) {
        const auto &st = resume->state;
        if (!(st.model == config.model) || !(st.optimizer == config.optimizer) || st.batchSize != config.batchSize ||
            st.seed != config.seed)
            say("note: run '" + s.run + "' continues with the settings it was started with (model " + st.model.name +
                ", " + train::optimizerKindName(st.optimizer.kind) + ", batch " + std::to_string(st.batchSize) +
                "); pass --fresh to start over with new ones");
        config.model = st.model;
        config.optimizer = st.optimizer;
        config.batchSize = st.batchSize;
        config.seed = st.seed;
    }

    device::ThreadConfig threads = m_governor->threadConfig();
    device::applyThreadConfig(threads);
    m_governor->checkFits(trainingBytes(config), "training " + config.model.name);

    train::Trainer trainer(config, train);
    WholeModelSummary summary;
    if (resume) {
        trainer.restore(resume->state);
        summary.startStep = trainer.stepCount();
        say("resuming run '" + s.run + "' from its checkpoint at step " + std::to_string(summary.startStep));
    }
    summary.endStep = trainer.stepCount();
    if (trainer.stepCount() >= s.steps) {
        say("run '" + s.run + "' has already trained " + std::to_string(trainer.stepCount()) +
            " steps; raise --steps to train further, or pass --fresh to start over");
        summary.finalEval = trainer.evaluate(test);
        return summary;
    }
    say("training " + config.model.name + " (" + format::count(model::parameterCount(config.model)) +
        " parameters) on " + format::count(train->count) + " samples, batch " + std::to_string(config.batchSize) +
        ", " + threads.describe() + " threads, steps " + std::to_string(trainer.stepCount()) + " to " +
        std::to_string(s.steps));

    store::CheckpointWriter writer(checkpoints, s.run, s.keepCheckpoints,
                                   {m_callbacks.checkpointStarted,
                                    [this](const store::CheckpointInfo &info) {
                                        if (m_callbacks.checkpointSaved)
                                            m_callbacks.checkpointSaved(info.step);
                                    },
                                    nullptr});

    // The governor speaks for itself when its state changes; a stop request must also
    // reach a thread that the governor holds, hence the watcher.
    m_governor->setObserver([this](const device::GovernorStatus &st) { say("governor: " + st.reason); });
    if (m_governor->status().state != device::GovernorState::Running)
        say("governor: " + m_governor->status().reason);
    std::jthread stopWatcher;
    if (stop)
        stopWatcher = std::jthread([this, stop](std::stop_token quit) {
            while (!quit.stop_requested() && !stop->load())
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            if (stop->load())
                m_governor->close("stopped: on request");
        });

    WholeModelProgress progress;
    progress.totalSteps = s.steps;
    Smoothed loss, rate;
    int64_t lastSubmitted = trainer.stepCount();
    const auto start = Clock::now();
    auto lastReport = Clock::now();
    while (trainer.stepCount() < s.steps) {
        if ((stop && stop->load()) || !m_governor->enter()) {
            summary.stopped = true;
            summary.stopReason = stop && stop->load() ? "stopped: on request" : m_governor->status().reason;
            break;
        }
        if (const auto wanted = m_governor->threadConfig(); !(wanted == threads))
            device::applyThreadConfig(threads = wanted);
        const auto stepStart = Clock::now();
        const train::StepMetrics m = trainer.step();
        m_governor->leave(Clock::now() - stepStart);
        loss.add(m.loss);
        rate.add(m.samplesPerSecond());
        progress.samplesTotal += m.samples;
        const int64_t step = trainer.stepCount();
        if (s.checkpointEvery > 0 && step % s.checkpointEvery == 0 && step < s.steps) {
            writer.submit(trainer.state());
            lastSubmitted = step;
        }
        if (s.evalEvery > 0 && step % s.evalEvery == 0 && step < s.steps) {
            progress.lastEval = trainer.evaluate(test);
            if (m_callbacks.evaluated)
                m_callbacks.evaluated(step, *progress.lastEval);
        }
        if (secondsSince(lastReport) >= 0.5 || step == s.steps) {
            lastReport = Clock::now();
            progress.step = step;
            progress.loss = loss.value;
            progress.samplesPerSecond = rate.value;
            const double stepsPerSecond = rate.value / double(config.batchSize);
            progress.etaSeconds = stepsPerSecond > 0 ? double(s.steps - step) / stepsPerSecond : -1;
            if (m_callbacks.progress)
                m_callbacks.progress(progress);
        }
    }
    m_governor->setObserver(nullptr);
    summary.endStep = trainer.stepCount();
    summary.seconds = secondsSince(start);
    if (summary.endStep != lastSubmitted)
        writer.submit(trainer.state());
    writer.flush();
    if (!summary.stopped) {
        summary.finalEval = trainer.evaluate(test);
        if (m_callbacks.evaluated)
            m_callbacks.evaluated(summary.endStep, *summary.finalEval);
    }
    return summary;
}

} // namespace rookery::host
