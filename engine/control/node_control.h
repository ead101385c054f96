// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "engine/control/control_server.h"
#include "engine/node/engine_snapshot.h"

namespace rookery::device {
class Governor;
}

namespace rookery::control {

/// What a headless node publishes about its training, from its progress callbacks.
struct NodeProgress
{
    node::TrainingView training;
    int64_t samplesTotal = 0; ///< as the run counts them (it may restart from 0 on a new assignment)
    int64_t ringRounds = 0;   ///< swarm: averaging rounds completed (same)
    int64_t ringSkipped = 0;
};

/// A headless node as its local control API shows it: the state the node publishes
/// (assignment, progress, messages), its governor for pause, resume, snooze and
/// settings, and the routes of the API (docs/user-guide.md, "The control API"):
///
///   GET  /v1/status                 the snapshot (engine_snapshot.h) as JSON
///   GET  /v1/events?after=N         messages after sequence N: {"next": M, "events": [...]}
///   POST /v1/pause, /v1/resume      the governor's pause and resume; answer: the status
///   POST /v1/snooze?minutes=N       hold for N minutes (1-1440)
///   GET  /v1/governor/settings      the governor's settings as keys and values
///   PUT  /v1/governor/settings      new settings (a JSON object), whole or not at all
///   POST /v1/stop                   checkpoint and exit, as SIGTERM does
///   GET  /metrics                   Prometheus text (served without the token)
///
/// Thread safety: every method may be called from any thread. setGovernor() waits for
/// the requests that are using the old governor, so once setGovernor(nullptr) returns
/// the governor may be destroyed.
class NodeControl
{
public:
    /// `mode` is "local" or "swarm"; `requestStop` is called (on the server's thread)
    /// for POST /v1/stop and must return at once.
    NodeControl(std::string mode, std::function<void()> requestStop);

    void setGovernor(device::Governor *governor);
    void setAssignment(const node::AssignmentView &assignment);
    /// The swarm as the coordinator's status API shows it (a swarm node only).
    void setPeers(std::vector<node::PeerView> peers, std::vector<node::PeerLinkView> links);
    /// The checkpoints in the node's database, newest first.
    void setCheckpoints(std::vector<node::CheckpointView> checkpoints);
    void setRunning(bool running);
    void setError(const std::string &error);
    void publish(const NodeProgress &progress);
    /// A message for the desktop app's event log; the newest 512 are kept.
    void addEvent(node::EngineEvent::Level level, const std::string &area, const std::string &message);

    node::EngineSnapshot snapshot() const;
    /// Prometheus text exposition format 0.0.4.
    std::string metrics() const;
    /// The routes above, for ControlServer.
    ControlResponse handle(const ControlRequest &request);

private:
    // The attached governor, held (shared) for as long as the lease lives.
    struct GovernorLease
    {
        std::shared_lock<std::shared_mutex> lock;
        device::Governor *governor = nullptr;
    };
    GovernorLease leaseGovernor() const;
    node::GovernorView governorView() const;
    ControlResponse governorCommand(const ControlRequest &request);
    ControlResponse settingsCommand(const ControlRequest &request);

    const std::string m_mode;
    const std::function<void()> m_requestStop;
    const int64_t m_startedAtMs;
    mutable std::shared_mutex m_governorMutex; // held exclusively only by setGovernor()
    device::Governor *m_governor = nullptr;
    mutable std::mutex m_mutex;
    node::EngineSnapshot m_snapshot;
    NodeProgress m_last;
    int64_t m_samplesTotal = 0; ///< this process's, across restarts of the run's count
    int64_t m_ringRounds = 0;
    int64_t m_ringSkipped = 0;
    std::deque<node::EngineEvent> m_events;
    int64_t m_nextEvent = 0; ///< the sequence number the next event gets
};

} // namespace rookery::control
