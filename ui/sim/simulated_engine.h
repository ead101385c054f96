// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "engine/host/engine_api.h"

namespace rookery::ui {

/// A stand-in engine for the desktop app (--simulate, tests, demonstrations): it invents
/// plausible figures (a demo swarm of three clusters, a falling loss, checkpoints) on
/// its own thread and keeps the EngineApi contract (commands return at once, results
/// and the notifier come from its thread, consent gates every start). The app announces
/// it as a simulation.
///
/// Thread safety: every method may be called from any thread.
class SimulatedEngine final : public host::EngineApi
{
public:
    SimulatedEngine();
    ~SimulatedEngine() override;

    void setConsent(bool given) override;
    void startLocal(ResultCallback done) override;
    void joinSwarm(const std::string &address, ResultCallback done) override;
    void startDemoSwarm(int nodes, ResultCallback done) override;
    void stopTraining(ResultCallback done) override;
    void pause() override;
    void resume() override;
    void snooze(int minutes) override;
    std::map<std::string, std::string> governorSettings() const override;
    void applyGovernorSettings(const std::map<std::string, std::string> &settings, ResultCallback done) override;
    void resumeCheckpoint(int64_t id, ResultCallback done) override;
    void deleteCheckpoint(int64_t id, ResultCallback done) override;
    host::EngineSnapshot snapshot() const override;
    std::vector<host::EngineEvent> takeEvents() override;
    void setNotifier(std::function<void()> notify) override;

    /// The invented loss after `step` steps (also used to backfill screenshots' charts).
    static double lossAt(int64_t step);

private:
    void post(std::function<void()> job);
    void run();
    void tick(double seconds);
    void begin(const std::string &mode, const std::string &swarm, int peers, int64_t fromStep);
    void end(const char *why);
    void saveCheckpoint();
    void say(host::EngineEvent::Level level, const char *area, std::string message);
    void publish(bool notify);
    static std::string validate(const std::map<std::string, std::string> &settings);

    // Engine thread only.
    host::EngineSnapshot m_state;
    std::mt19937 m_random{7};
    double m_stepCarry = 0;
    int64_t m_nextCheckpointId = 1;
    int m_cpuPercent = 100;

    // Shared, under m_mutex.
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::function<void()>> m_jobs;
    bool m_quit = false;
    host::EngineSnapshot m_published;
    std::deque<host::EngineEvent> m_events;
    std::function<void()> m_notify;
    std::map<std::string, std::string> m_settings;

    std::thread m_thread;
};

} // namespace rookery::ui
