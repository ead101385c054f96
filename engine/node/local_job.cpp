// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/node/local_job.h"

#include <chrono>
#include <cstdio>

#include "engine/common/error.h"
#include "engine/device/governor.h"
#include "engine/device/thread_priority.h"
#include "engine/model/model_zoo.h"
#include "engine/node/engine_views.h"

namespace rookery::node {
namespace {

using Level = EngineEvent::Level;

AssignmentView localAssignment(const LocalRunSettings &s)
{
    const auto spec = model::modelByName(s.model);
    AssignmentView a;
    a.mode = "local";
    a.swarm = "this computer";
    a.cluster = 0;
    a.clusterCount = 1;
    a.stage = 0;
    a.stageCount = 1;
    a.role = stageRole(0, 1);
    a.layers = layerNames(spec);
    a.model = spec.name; // as a swarm's status names it
    return a;
}

std::string percent(double fraction)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f%%", fraction * 100);
    return text;
}

} // namespace

LocalJob::LocalJob(LocalRunSettings settings, int64_t startStep, JobConsole console, bool lowerPriority, Events events)
    : TrainingJob(std::move(events))
    , m_settings(std::move(settings))
    , m_assignment(localAssignment(m_settings))
    , m_console(std::move(console))
    , m_lowerPriority(lowerPriority)
{
    const LocalRun::Callbacks &out = m_console.wholeModel;
    m_progress.step = startStep;
    m_progress.totalSteps = m_settings.steps;
    LocalRun::Callbacks c;
    c.message = [this, &out](const std::string &text) {
        if (out.message)
            out.message(text);
        reportStarted(""); // the run speaks once its data and database are loaded
        constexpr std::string_view kGovernor = "governor: ";
        if (text.rfind(kGovernor, 0) == 0)
            say(Level::Info, "governor", text.substr(kGovernor.size()));
        else
            say(Level::Info, "train", text);
    };
    c.progress = [this, &out](const LocalRunProgress &p) {
        if (out.progress)
            out.progress(p);
        reportStarted("");
        std::lock_guard lock(m_mutex);
        m_progress = p;
    };
    c.evaluated = [this, &out](int64_t step, const train::EvalMetrics &e) {
        if (out.evaluated)
            out.evaluated(step, e);
        {
            std::lock_guard lock(m_mutex);
            m_testAccuracy = e.accuracy;
        }
        say(Level::Info, "train", "step " + std::to_string(step) + ": test accuracy " + percent(e.accuracy));
    };
    c.checkpointStarted = out.checkpointStarted;
    c.checkpointSaved = [this, &out](int64_t step) {
        if (out.checkpointSaved)
            out.checkpointSaved(step);
        say(Level::Info, "store", "checkpoint saved at step " + std::to_string(step));
        reportCheckpoint();
    };
    m_run = std::make_unique<LocalRun>(m_settings, std::move(c));
    m_thread = std::thread([this] { main(); });
}

LocalJob::~LocalJob()
{
    requestStop();
    if (m_thread.joinable())
        m_thread.join();
}

void LocalJob::main()
{
    if (m_lowerPriority)
        device::lowerCallingThreadPriority(); // torch's OpenMP workers start from here and inherit it
    try {
        const LocalRunSummary s = m_run->run(&m_stop);
        if (m_console.wholeModelDone)
            m_console.wholeModelDone(s);
        {
            std::lock_guard lock(m_mutex); // where it stopped, whenever the last report was
            m_progress.step = s.endStep;
        }
        std::string outcome = s.stopped ? s.stopReason : "finished at step " + std::to_string(s.endStep);
        if (s.finalEval)
            outcome += ", test accuracy " + percent(s.finalEval->accuracy);
        reportFinished(outcome, false);
    } catch (const std::exception &e) {
        reportFinished(e.what(), true);
    }
}

void LocalJob::requestStop() { m_stop = true; }
void LocalJob::pause() { m_run->governor().pause(); }
void LocalJob::resume() { m_run->governor().resume(); }
void LocalJob::snooze(int minutes) { m_run->governor().snooze(std::chrono::minutes(minutes)); }
void LocalJob::setGovernorSettings(const device::GovernorSettings &s) { m_run->governor().setSettings(s); }

JobView LocalJob::view() const
{
    JobView v;
    v.assignment = m_assignment;
    const device::GovernorStatus status = m_run->governor().status();
    v.governor = governorView(status);
    v.computing = status.state == device::GovernorState::Running || status.state == device::GovernorState::Throttled;
    std::lock_guard lock(m_mutex);
    auto &t = v.training;
    t.step = m_progress.step;
    t.totalSteps = m_progress.totalSteps;
    t.loss = m_progress.loss;
    t.samplesPerSecond = v.computing ? m_progress.samplesPerSecond : 0;
    t.etaSeconds = m_progress.etaSeconds;
    t.testAccuracy = m_testAccuracy;
    v.samplesDone = m_progress.samplesTotal;
    v.peers.push_back({"self", "this computer", 0, 0, v.computing ? "training" : "paused", t.samplesPerSecond, true});
    return v;
}

} // namespace rookery::node
