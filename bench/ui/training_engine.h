// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/data/image_dataset.h"
#include "engine/host/engine_api.h"

namespace rookery::bench {

/// An EngineApi for bench_ui that does real work: any start command trains the MLP on
/// Fashion-MNIST with the engine's Trainer on its own thread, at full speed on every
/// core, publishing a snapshot four times a second and a log line every second, as the
/// in-process engine will. Only what the window needs is implemented; it is not a node.
///
/// Thread safety: every method may be called from any thread.
class TrainingEngine final : public host::EngineApi
{
public:
    /// `compute` false: publish the same snapshots and events without training (to tell
    /// the window's own work from the CPU the trainer takes).
    explicit TrainingEngine(std::shared_ptr<const data::ImageDataset> train, bool compute = true);
    ~TrainingEngine() override;

    void setConsent(bool given) override;
    void startLocal(ResultCallback done) override { start(std::move(done)); }
    void joinSwarm(const std::string &, ResultCallback done) override { start(std::move(done)); }
    void startDemoSwarm(int, ResultCallback done) override { start(std::move(done)); }
    void stopTraining(ResultCallback done) override;
    void pause() override { m_paused = true; }
    void resume() override;
    void snooze(int) override { m_paused = true; }
    std::map<std::string, std::string> governorSettings() const override;
    void applyGovernorSettings(const std::map<std::string, std::string> &settings, ResultCallback done) override;
    void resumeCheckpoint(int64_t, ResultCallback done) override { start(std::move(done)); }
    void deleteCheckpoint(int64_t, ResultCallback done) override { done(""); }
    host::EngineSnapshot snapshot() const override;
    std::vector<host::EngineEvent> takeEvents() override;
    void setNotifier(std::function<void()> notify) override;

    /// Samples trained per second since the last call (or the start).
    double takeSamplesPerSecond();

    /// Lowers every thread of this process except the caller's to nice 19, the way a
    /// volunteer-computing engine should run its compute so that the desktop stays
    /// responsive: the threads still take every idle cycle. OpenBLAS starts its workers
    /// from the main thread when it loads, so they inherit its priority and are found
    /// through /proc/self/task. Returns how many threads were lowered. Irreversible
    /// without privileges.
    static int lowerOtherThreads();

private:
    void start(ResultCallback done);
    void train();
    void publish(const host::TrainingView &training, bool withEvent);

    std::shared_ptr<const data::ImageDataset> m_train;
    bool m_compute;
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_paused{false};
    std::atomic<int64_t> m_samples{0};
    std::atomic<double> m_seconds{0};
    int64_t m_samplesTaken = 0;
    double m_secondsTaken = 0;
    mutable std::mutex m_mutex;
    std::condition_variable m_resume;
    host::EngineSnapshot m_snapshot;
    std::deque<host::EngineEvent> m_events;
    std::function<void()> m_notify;
    std::map<std::string, std::string> m_settings;
    ResultCallback m_stopDone;
    std::thread m_thread;
};

} // namespace rookery::bench
