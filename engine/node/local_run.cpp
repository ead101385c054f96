// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/node/local_run.h"

#include <chrono>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/model/model_zoo.h"
#include "engine/store/checkpoint_store.h"
#include "engine/store/checkpoint_writer.h"

namespace rookery::node {
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

} // namespace

train::TrainerConfig trainerConfigFor(const LocalRunSettings &s)
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

LocalRun::LocalRun(LocalRunSettings settings, Callbacks callbacks)
    : m_settings(std::move(settings))
    , m_callbacks(std::move(callbacks))
{ }

void LocalRun::say(const std::string &text) const
{
    if (m_callbacks.message)
        m_callbacks.message(text);
}

LocalRunSummary LocalRun::run(const std::atomic<bool> *stop)
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

    const int cores = s.threads > 0 ? s.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    const device::ThreadConfig threads = device::defaultThreadConfig(cores);
    device::applyThreadConfig(threads);

    train::Trainer trainer(config, train);
    LocalRunSummary summary;
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

    LocalRunProgress progress;
    progress.totalSteps = s.steps;
    Smoothed loss, rate;
    int64_t lastSubmitted = trainer.stepCount();
    const auto start = Clock::now();
    auto lastReport = Clock::now();
    while (trainer.stepCount() < s.steps) {
        if (stop && stop->load()) {
            summary.stopped = true;
            break;
        }
        const train::StepMetrics m = trainer.step();
        loss.add(m.loss);
        rate.add(m.samplesPerSecond());
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

} // namespace rookery::node
