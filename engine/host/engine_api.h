// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/host/engine_snapshot.h"

namespace rookery::host {

/// The engine as the desktop app sees it: commands that return at once, a snapshot to
/// copy, and a queue of events. Implemented by the in-process engine, by a client of a
/// headless node's local control API, and by fakes in UI tests.
///
/// Thread safety: every method may be called from any thread and returns without
/// waiting on training, disk or network. Result callbacks and the notifier are called on
/// an engine thread; the UI's bridge hops them onto its own thread.
class EngineApi
{
public:
    /// "" on success, else a sentence saying what was wrong.
    using ResultCallback = std::function<void(const std::string &error)>;

    virtual ~EngineApi() = default;

    /// Consent gates all compute: until it is given nothing trains; withdrawing it
    /// checkpoints and stops whatever runs.
    virtual void setConsent(bool given) = 0;

    /// Starts training on this machine alone (the whole model).
    virtual void startLocal(ResultCallback done) = 0;
    /// Joins the swarm whose coordinator is at `address` (wss://host:port/#sha256=...).
    virtual void joinSwarm(const std::string &address, ResultCallback done) = 0;
    /// Starts a coordinator and `nodes` nodes on this machine and joins it.
    virtual void startDemoSwarm(int nodes, ResultCallback done) = 0;
    /// Checkpoints and stops training; the engine stays up.
    virtual void stopTraining(ResultCallback done) = 0;

    virtual void pause() = 0;
    virtual void resume() = 0;
    virtual void snooze(int minutes) = 0;

    /// The governor's settings as keys and values (the settings table's keys). Applied
    /// whole or not at all: on error the previous settings stay in force.
    virtual std::map<std::string, std::string> governorSettings() const = 0;
    virtual void applyGovernorSettings(const std::map<std::string, std::string> &settings, ResultCallback done) = 0;

    /// Resumes training from checkpoint `id` (of the snapshot's list); deletes one.
    virtual void resumeCheckpoint(int64_t id, ResultCallback done) = 0;
    virtual void deleteCheckpoint(int64_t id, ResultCallback done) = 0;

    /// A copy of the newest published state.
    virtual EngineSnapshot snapshot() const = 0;
    /// Takes the events queued since the last call (bounded; the oldest are dropped first).
    virtual std::vector<EngineEvent> takeEvents() = 0;
    /// Called (on an engine thread) when events are waiting or the snapshot changed
    /// much; calls are coalesced, so one call may stand for many changes.
    virtual void setNotifier(std::function<void()> notify) = 0;
};

} // namespace rookery::host
