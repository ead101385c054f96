// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/host.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/host/job_console.h"
#include "engine/host/training_job.h"
#include "engine/host/whole_model_run.h"

namespace rookery::host {

/// A WholeModelRun on a thread of its own at compute priority: this machine trains the whole
/// model. Pause, snooze and new limits go straight to the run's governor, so they take
/// effect within one step and keep the trainer's state in memory.
///
/// Thread safety: as TrainingJob.
class WholeModelJob final : public TrainingJob
{
public:
    /// `startStep`: where the run resumes (its newest checkpoint's step; 0 when fresh),
    /// shown until the first progress report. `console` hears the run as well (rookery-node
    /// prints it); `lowerPriority` runs it at nice 19. Throws rookery::Error for invalid
    /// settings; the thread starts only after that.
    WholeModelJob(WholeModelSettings settings, int64_t startStep, JobConsole console, bool lowerPriority,
                  Events events);
    ~WholeModelJob() override;

    void requestStop() override;
    void pause() override;
    void resume() override;
    void snooze(int minutes) override;
    void setGovernorSettings(const device::GovernorSettings &settings) override;
    JobView view() const override;

private:
    void main();

    const WholeModelSettings m_settings;
    const AssignmentView m_assignment;
    const JobConsole m_console;
    const bool m_lowerPriority;
    std::unique_ptr<WholeModelRun> m_run;
    std::atomic<bool> m_stop{false};

    mutable std::mutex m_mutex;
    WholeModelProgress m_progress;
    double m_testAccuracy = -1;
    bool m_spoke = false; // the run has loaded its data and database and begun

    std::thread m_thread;
};

} // namespace rookery::host
