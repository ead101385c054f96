// SPDX-License-Identifier: GPL-3.0-or-later
// FakeEngine: an EngineApi for UI tests. It records every command, keeps a tiny state
// machine (consent, running, paused) so that the UI can be seen to follow it, and lets
// a test publish snapshots and events. Result callbacks are held until the test
// completes them, and are then called on a separate thread, as an engine would.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/host/engine_api.h"

namespace rookery::test {

class FakeEngine : public host::EngineApi
{
public:
    /// When true (the default) commands with a result complete at once (on another
    /// thread); when false they wait for completeNext().
    bool autoComplete = true;
    /// The error the next auto-completed applyGovernorSettings() reports ("" = accept).
    std::string settingsError;

    void setConsent(bool given) override
    {
        std::lock_guard lock(m_mutex);
        record("consent:" + std::string(given ? "true" : "false"));
        m_snapshot.consentGiven = given;
        if (!given)
            m_snapshot.running = false; // withdrawing checkpoints and stops
        bumpLocked();
    }
    void startLocal(ResultCallback done) override { start("start-local", "local", std::move(done)); }
    void joinSwarm(const std::string &address, ResultCallback done) override
    {
        start("join:" + address, "swarm", std::move(done));
    }
    void startDemoSwarm(int nodes, ResultCallback done) override
    {
        start("demo-swarm:" + std::to_string(nodes), "swarm", std::move(done));
    }
    void stopTraining(ResultCallback done) override
    {
        std::unique_lock lock(m_mutex);
        record("stop");
        m_snapshot.running = false;
        bumpLocked();
        finishLocked(lock, std::move(done), "");
    }
    void pause() override { setPaused("pause", true); }
    void resume() override { setPaused("resume", false); }
    void snooze(int minutes) override
    {
        std::lock_guard lock(m_mutex);
        record("snooze:" + std::to_string(minutes));
        m_snapshot.governor.state = "paused";
        m_snapshot.governor.snoozedUntilMs = 1;
        bumpLocked();
    }
    std::map<std::string, std::string> governorSettings() const override
    {
        std::lock_guard lock(m_mutex);
        return m_settings;
    }
    void applyGovernorSettings(const std::map<std::string, std::string> &settings, ResultCallback done) override
    {
        std::unique_lock lock(m_mutex);
        record("settings");
        m_applied.push_back(settings);
        const std::string error = settingsError;
        if (error.empty())
            for (const auto &[k, v] : settings)
                m_settings[k] = v;
        finishLocked(lock, std::move(done), error);
    }
    void resumeCheckpoint(int64_t id, ResultCallback done) override
    {
        start("resume-checkpoint:" + std::to_string(id), "local", std::move(done));
    }
    void deleteCheckpoint(int64_t id, ResultCallback done) override
    {
        std::unique_lock lock(m_mutex);
        record("delete-checkpoint:" + std::to_string(id));
        auto &list = m_snapshot.checkpoints;
        list.erase(std::remove_if(list.begin(), list.end(), [id](const auto &c) { return c.id == id; }), list.end());
        bumpLocked();
        finishLocked(lock, std::move(done), "");
    }
    host::EngineSnapshot snapshot() const override
    {
        std::lock_guard lock(m_mutex);
        ++m_snapshotReads;
        return m_snapshot;
    }
    std::vector<host::EngineEvent> takeEvents() override
    {
        std::lock_guard lock(m_mutex);
        ++m_takes;
        std::vector<host::EngineEvent> out(m_events.begin(), m_events.end());
        m_events.clear();
        return out;
    }
    void setNotifier(std::function<void()> notify) override
    {
        std::lock_guard lock(m_mutex);
        m_notify = std::move(notify);
    }

    // ---- for the test ----

    /// Replaces the state (the sequence is advanced, not taken from `s`).
    void publish(host::EngineSnapshot s)
    {
        std::lock_guard lock(m_mutex);
        s.sequence = m_snapshot.sequence;
        m_snapshot = std::move(s);
        bumpLocked();
    }
    void pushEvent(host::EngineEvent e)
    {
        std::lock_guard lock(m_mutex);
        m_events.push_back(std::move(e));
    }
    /// Calls the notifier `times` times from another thread, as an engine would.
    void notifyFromThread(int times = 1)
    {
        std::function<void()> notify;
        {
            std::lock_guard lock(m_mutex);
            notify = m_notify;
        }
        std::thread([notify, times] {
            for (int i = 0; notify && i < times; ++i)
                notify();
        }).join();
    }
    /// Completes the oldest held command with `error`, from another thread.
    bool completeNext(const std::string &error = {})
    {
        ResultCallback done;
        {
            std::lock_guard lock(m_mutex);
            if (m_pending.empty())
                return false;
            done = std::move(m_pending.front());
            m_pending.pop_front();
        }
        std::thread([done, error] { done(error); }).join();
        return true;
    }
    size_t pendingCount() const
    {
        std::lock_guard lock(m_mutex);
        return m_pending.size();
    }
    std::vector<std::string> commands() const
    {
        std::lock_guard lock(m_mutex);
        return m_commands;
    }
    bool received(const std::string &prefix) const
    {
        const auto all = commands();
        return std::any_of(all.begin(), all.end(), [&](const auto &c) { return c.rfind(prefix, 0) == 0; });
    }
    /// True when a start command (local, join, demo swarm, resume) was received.
    bool receivedStart() const
    {
        return received("start-local") || received("join:") || received("demo-swarm:") ||
               received("resume-checkpoint:");
    }
    std::vector<std::map<std::string, std::string>> appliedSettings() const
    {
        std::lock_guard lock(m_mutex);
        return m_applied;
    }
    bool hasNotifier() const
    {
        std::lock_guard lock(m_mutex);
        return bool(m_notify);
    }
    int snapshotReads() const
    {
        std::lock_guard lock(m_mutex);
        return m_snapshotReads;
    }
    int takes() const
    {
        std::lock_guard lock(m_mutex);
        return m_takes;
    }
    host::EngineSnapshot state() const
    {
        std::lock_guard lock(m_mutex);
        return m_snapshot;
    }

private:
    void record(std::string command) { m_commands.push_back(std::move(command)); }
    void bumpLocked() { ++m_snapshot.sequence; }
    void start(const std::string &command, const std::string &mode, ResultCallback done)
    {
        std::unique_lock lock(m_mutex);
        record(command);
        std::string error;
        if (!m_snapshot.consentGiven) {
            error = "consent has not been given";
        } else {
            m_snapshot.running = true;
            m_snapshot.assignment.mode = mode;
            m_snapshot.governor.state = "running";
            bumpLocked();
        }
        finishLocked(lock, std::move(done), error);
    }
    void setPaused(const std::string &command, bool paused)
    {
        std::lock_guard lock(m_mutex);
        record(command);
        m_snapshot.governor.pausedByUser = paused;
        m_snapshot.governor.state = paused ? "paused" : "running";
        bumpLocked();
    }
    void finishLocked(std::unique_lock<std::mutex> &lock, ResultCallback done, const std::string &error)
    {
        if (!done)
            return;
        if (!autoComplete) {
            m_pending.push_back(std::move(done));
            return;
        }
        lock.unlock();
        std::thread([done = std::move(done), error] { done(error); }).join();
    }

    mutable std::mutex m_mutex;
    host::EngineSnapshot m_snapshot;
    std::deque<host::EngineEvent> m_events;
    std::function<void()> m_notify;
    std::map<std::string, std::string> m_settings;
    std::vector<std::map<std::string, std::string>> m_applied;
    std::vector<std::string> m_commands;
    std::deque<ResultCallback> m_pending;
    mutable int m_snapshotReads = 0;
    int m_takes = 0;
};

} // namespace rookery::test
