// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "engine/control/control_server.h"
#include "engine/host/engine_api.h"

namespace rookery::control {

struct EngineControlOptions
{
    /// Whether the commands that start or end work (consent, local, join, demo swarm,
    /// resume a checkpoint) reach the engine; when not, they are refused (409) with
    /// `refusal`. Stop always does.
    bool jobCommands = true;
    std::string refusal = "this node trains what it was started with";
    /// How long a command with a result waits for it before answering 202 (accepted; the
    /// outcome then shows in the status and the events).
    std::chrono::milliseconds resultWait{2000};
};

/// The local control API as a thin HTTP adapter over any EngineApi
/// (docs/user-guide.md, "The control API"); RemoteEngine is its mirror image:
///
///   GET  /v1/status                  snapshot() as JSON
///   GET  /v1/events?after=N          the events after sequence N: {"next": M, "events": [...]}
///   POST /v1/consent?given=B         setConsent(B)
///   POST /v1/local                   startLocal()
///   POST /v1/join                    joinSwarm(), the body {"address": "wss://..."}
///   POST /v1/demo-swarm?nodes=N      startDemoSwarm(N)
///   POST /v1/stop                    stopTraining(): checkpoint and stop (202)
///   POST /v1/pause, /v1/resume       pause(), resume(); answer: the status
///   POST /v1/snooze?minutes=N        snooze(N), N from 1 to 1440
///   GET  /v1/governor/settings       governorSettings() as a JSON object
///   PUT  /v1/governor/settings       applyGovernorSettings(), whole or not at all
///   POST /v1/checkpoints/resume?id=N resumeCheckpoint(N)
///   POST /v1/checkpoints/delete?id=N deleteCheckpoint(N)
///   GET  /metrics                    Prometheus text, from the snapshot
///
/// Events are taken from the engine as requests come and kept (the newest 512) with
/// sequence numbers, so that several clients can each read them all.
///
/// Thread safety: handle() from any thread (the server calls it on its own).
class EngineControl
{
public:
    EngineControl(host::EngineApi &engine, EngineControlOptions options = {});

    /// The routes above, for ControlServer.
    ControlResponse handle(const ControlRequest &request);
    /// Prometheus text exposition format 0.0.4.
    std::string metrics() const;

private:
    ControlResponse route(const ControlRequest &request);
    ControlResponse eventPage(const ControlRequest &request);
    ControlResponse governorCommand(const ControlRequest &request);
    ControlResponse settingsCommand(const ControlRequest &request);
    ControlResponse jobCommand(const ControlRequest &request);
    /// Runs `command` and waits up to resultWait for its result.
    ControlResponse withResult(const std::function<void(host::EngineApi::ResultCallback)> &command);
    /// The status once the engine published what a command changed (bounded wait).
    ControlResponse statusAfter(int64_t sequence);
    void note(const std::string &message);
    void drainEngineEvents();

    host::EngineApi &m_engine;
    const EngineControlOptions m_options;
    const int64_t m_startedAtMs;
    mutable std::mutex m_mutex;
    std::deque<host::EngineEvent> m_events;
    int64_t m_nextEvent = 0; ///< the sequence number the next event gets
};

} // namespace rookery::control
