// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/host: what NodeEngine runs, one at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/device/governor_settings.h"
#include "engine/host/engine_snapshot.h"

namespace rookery::host {

/// The parts of the snapshot a running job owns.
struct JobView
{
    AssignmentView assignment;
    TrainingView training;
    std::vector<PeerView> peers;
    std::vector<PeerLinkView> links;
    std::vector<JoinStepView> join;       ///< a swarm job's join steps
    int64_t samplesDone = 0;              ///< trained by this node since the job started
    bool computing = false;               ///< training now (not held, not waiting): its CPU time counts
    std::optional<GovernorView> governor; ///< the job's own governor, when it has one
    std::string waiting;                  ///< why the job cannot train now though nothing holds it ("" when it can)
};

/// One training job on threads of its own: a local run, or this node in a swarm.
///
/// Thread safety: every method may be called from any thread. The events come from the
/// job's threads; `finished` is the last thing the job's main thread does.
class TrainingJob
{
public:
    struct Events
    {
        std::function<void(EngineEvent::Level, const std::string &area, const std::string &text)> say;
        /// Once: "" when training got under way (data and database loaded), else why not.
        std::function<void(const std::string &error)> started;
        /// Once, last: how the job ended, and whether that was a failure.
        std::function<void(const std::string &outcome, bool failed)> finished;
        std::function<void()> checkpointSaved;
    };

    explicit TrainingJob(Events events)
        : m_events(std::move(events))
    { }
    /// Derived destructors stop the job and join its threads (the job checkpoints).
    virtual ~TrainingJob() = default;
    TrainingJob(const TrainingJob &) = delete;
    TrainingJob &operator=(const TrainingJob &) = delete;

    /// Checkpoints and ends; `finished` follows.
    virtual void requestStop() = 0;
    virtual void pause() = 0;
    virtual void resume() = 0;
    virtual void snooze(int minutes) = 0;
    /// Already validated by the engine's governor.
    virtual void setGovernorSettings(const device::GovernorSettings &settings) = 0;
    virtual JobView view() const = 0;

protected:
    void say(EngineEvent::Level level, const std::string &area, const std::string &text) const
    {
        if (m_events.say)
            m_events.say(level, area, text);
    }
    void reportStarted(const std::string &error)
    {
        if (!m_startReported.exchange(true) && m_events.started)
            m_events.started(error);
    }
    void reportFinished(const std::string &outcome, bool failed)
    {
        reportStarted(failed ? outcome : std::string());
        if (m_events.finished)
            m_events.finished(outcome, failed);
    }
    void reportCheckpoint() const
    {
        if (m_events.checkpointSaved)
            m_events.checkpointSaved();
    }

private:
    Events m_events;
    std::atomic<bool> m_startReported{false};
};

} // namespace rookery::host
