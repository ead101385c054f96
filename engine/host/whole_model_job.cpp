// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/whole_model_job.h"

#include <chrono>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/device/governor.h"
#include "engine/device/thread_priority.h"
#include "engine/host/engine_views.h"
#include "engine/model/model_zoo.h"

namespace rookery::host {
namespace {

using Level = EngineEvent::Level;

AssignmentView localAssignment(const WholeModelSettings &s)
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
    a.modelLayers = int(spec.layers.size());
    a.modelParameters = a.stageParameters = model::parameterCount(spec);
    return a;
}

} // namespace

WholeModelJob::WholeModelJob(WholeModelSettings settings, int64_t startStep, JobConsole console, bool lowerPriority,
                             Events events)
    : TrainingJob(std::move(events))
    , m_settings(std::move(settings))
    , m_assignment(localAssignment(m_settings))
    , m_console(std::move(console))
    , m_lowerPriority(lowerPriority)
{
    const WholeModelRun::Callbacks &out = m_console.wholeModel;
    m_progress.step = startStep;
    m_progress.totalSteps = m_settings.steps;
    WholeModelRun::Callbacks c;
    c.message = [this, &out](const std::string &text) {
        if (out.message)
            out.message(text);
        reportStarted(""); // the run speaks once its data and database are loaded
        {
            std::lock_guard lock(m_mutex);
            m_spoke = true;
        }
        constexpr std::string_view kGovernor = "governor: ";
        if (text.rfind(kGovernor, 0) == 0)
            say(Level::Info, "governor", text.substr(kGovernor.size()));
        else
            say(Level::Info, "train", text);
    };
    c.progress = [this, &out](const WholeModelProgress &p) {
        if (out.progress)
            out.progress(p);
        reportStarted("");
        std::lock_guard lock(m_mutex);
        m_spoke = true;
        m_progress = p;
    };
    c.evaluated = [this, &out](int64_t step, const train::EvalMetrics &e) {
        if (out.evaluated)
            out.evaluated(step, e);
        {
            std::lock_guard lock(m_mutex);
            m_testAccuracy = e.accuracy;
        }
        say(Level::Info, "train", "step " + std::to_string(step) + ": test accuracy " + format::percent(e.accuracy, 2));
    };
    c.checkpointStarted = out.checkpointStarted;
    c.checkpointSaved = [this, &out](int64_t step) {
        if (out.checkpointSaved)
            out.checkpointSaved(step);
        say(Level::Info, "store", "checkpoint saved at step " + std::to_string(step));
        reportCheckpoint();
    };
    m_run = std::make_unique<WholeModelRun>(m_settings, std::move(c));
    m_thread = std::thread([this] { main(); });
}

WholeModelJob::~WholeModelJob()
{
    requestStop();
    if (m_thread.joinable())
        m_thread.join();
}

void WholeModelJob::main()
{
    if (m_lowerPriority)
        device::lowerCallingThreadPriority(); // torch's OpenMP workers start from here and inherit it
    try {
        const WholeModelSummary s = m_run->run(&m_stop);
        if (m_console.wholeModelDone)
            m_console.wholeModelDone(s);
        {
            std::lock_guard lock(m_mutex); // where it stopped, whenever the last report was
            m_progress.step = s.endStep;
        }
        std::string outcome = s.stopped ? s.stopReason : "finished at step " + std::to_string(s.endStep);
        if (s.finalEval)
            outcome += ", test accuracy " + format::percent(s.finalEval->accuracy, 2);
        reportFinished(outcome, false);
    } catch (const std::exception &e) {
        reportFinished(e.what(), true);
    }
}

void WholeModelJob::requestStop() { m_stop = true; }
void WholeModelJob::pause() { m_run->governor().pause(); }
void WholeModelJob::resume() { m_run->governor().resume(); }
void WholeModelJob::snooze(int minutes) { m_run->governor().snooze(std::chrono::minutes(minutes)); }
void WholeModelJob::setGovernorSettings(const device::GovernorSettings &s) { m_run->governor().setSettings(s); }

JobView WholeModelJob::view() const
{
    JobView v;
    v.assignment = m_assignment;
    const device::GovernorStatus status = m_run->governor().status();
    v.governor = governorView(status);
    std::lock_guard lock(m_mutex);
    // Loading the data is not training: a run that fails there gave nothing (and its
    // database stays as it was).
    v.computing =
        m_spoke && (status.state == device::GovernorState::Running || status.state == device::GovernorState::Throttled);
    auto &t = v.training;
    t.step = m_progress.step;
    t.totalSteps = m_progress.totalSteps;
    t.loss = m_progress.loss;
    t.samplesPerSecond = v.computing ? m_progress.samplesPerSecond : 0;
    t.etaSeconds = m_progress.etaSeconds;
    t.testAccuracy = m_testAccuracy;
    v.samplesDone = m_progress.samplesTotal;
    v.peers.push_back({"self", "this computer", 0, 0,
                       v.computing ? "training"
                       : m_spoke   ? "paused"
                                   : "idle",
                       t.samplesPerSecond, true});
    return v;
}

} // namespace rookery::host
