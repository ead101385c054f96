// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/ui/training_engine.h"

#include <chrono>

#include "engine/common/wall_clock.h"
#include "engine/device/compute_threads.h"
#include "engine/device/thread_config.h"
#include "engine/device/thread_priority.h"
#include "engine/model/model_zoo.h"
#include "engine/train/trainer.h"

namespace rookery::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

/// A swarm around this node, so that the peer graph has something to draw and update.
void addSwarm(host::EngineSnapshot &s)
{
    for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 3; ++k) {
            const std::string id = "p" + std::to_string(c * 3 + k);
            s.peers.push_back({id, id, c, k, "training", 0, c == 1 && k == 1});
            if (k > 0)
                s.links.push_back({"p" + std::to_string(c * 3 + k - 1), id});
            s.links.push_back({id, "p" + std::to_string(((c + 1) % 3) * 3 + k), host::PeerLinkView::Kind::Ring});
        }
    for (int i = 0; i < 5; ++i)
        s.checkpoints.push_back({5 - i, "local", 500 * (5 - i), nowMs() - i * 60'000, "mlp", 2'600'000});
}

} // namespace

TrainingEngine::TrainingEngine(std::shared_ptr<const data::ImageDataset> train, bool compute)
    : m_train(std::move(train))
    , m_compute(compute)
{
    m_snapshot.device.measured = true;
    m_snapshot.device.cpuModel = "bench";
    m_snapshot.device.logicalCores = int(std::thread::hardware_concurrency());
    m_snapshot.assignment.mode = "idle";
}

TrainingEngine::~TrainingEngine()
{
    m_stop = true;
    m_paused = false;
    m_resume.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void TrainingEngine::setConsent(bool given)
{
    std::lock_guard lock(m_mutex);
    m_snapshot.consentGiven = given;
    ++m_snapshot.sequence;
}

void TrainingEngine::start(ResultCallback done)
{
    {
        std::lock_guard lock(m_mutex);
        if (!m_snapshot.consentGiven || m_thread.joinable()) {
            const bool consent = m_snapshot.consentGiven;
            std::thread([done, consent] {
                done(consent ? "already training" : "consent has not been given");
            }).detach();
            return;
        }
        m_snapshot.running = true;
        auto &a = m_snapshot.assignment;
        a.mode = "local";
        a.swarm = "this computer";
        a.cluster = 1, a.clusterCount = 3, a.stage = 1, a.stageCount = 3;
        a.role = "middle";
        a.layers = {"Linear(512->512)", "ReLU"};
        a.model = "mlp";
        a.reachability = "direct";
        m_snapshot.governor.state = "running";
        addSwarm(m_snapshot);
        ++m_snapshot.sequence;
    }
    m_thread = std::thread([this] { train(); });
    std::thread([done] { done(""); }).detach();
}

void TrainingEngine::train()
{
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    device::applyThreadConfig(device::defaultThreadConfig(cores));
    train::TrainerConfig config;
    config.model = model::mlpSpec();
    config.optimizer.learningRate = 0.05;
    config.optimizer.momentum = 0.9;
    train::Trainer trainer(config, m_train);
    const auto begin = SteadyClock::now();
    auto lastPublish = begin, lastEvent = begin;
    host::TrainingView view;
    view.totalSteps = 1'000'000;
    int64_t samplesSincePublish = 0;
    while (!m_stop) {
        if (m_paused) {
            std::unique_lock lock(m_mutex);
            m_resume.wait(lock, [this] { return !m_paused || m_stop; });
            continue;
        }
        train::StepMetrics step;
        if (m_compute) {
            step = trainer.step();
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            step.step = view.step + 1;
            step.samples = 64;
            step.loss = 1.0;
        }
        m_samples += step.samples;
        samplesSincePublish += step.samples;
        const auto now = SteadyClock::now();
        m_seconds = std::chrono::duration<double>(now - begin).count();
        const double sincePublish = std::chrono::duration<double>(now - lastPublish).count();
        if (sincePublish >= 0.25) {
            view.step = step.step;
            view.loss = step.loss;
            view.samplesPerSecond = double(samplesSincePublish) / sincePublish;
            const bool event = now - lastEvent >= std::chrono::seconds(1);
            publish(view, event);
            lastPublish = now;
            samplesSincePublish = 0;
            if (event)
                lastEvent = now;
        }
    }
    ResultCallback done;
    {
        std::lock_guard lock(m_mutex);
        m_snapshot.running = false;
        ++m_snapshot.sequence;
        done = std::move(m_stopDone);
    }
    if (done)
        done("");
}

void TrainingEngine::publish(const host::TrainingView &training, bool withEvent)
{
    std::function<void()> notify;
    {
        std::lock_guard lock(m_mutex);
        auto &s = m_snapshot;
        s.training = training;
        s.contribution.samplesToday = s.contribution.samplesTotal = m_samples.load();
        s.contribution.computeHoursTotal = s.contribution.computeHoursToday = m_seconds.load() / 3600.0;
        for (auto &p : s.peers)
            p.samplesPerSecond = training.samplesPerSecond * (p.self ? 1.0 : 0.9 + 0.02 * double(p.id.back() - '0'));
        ++s.sequence;
        if (withEvent) {
            m_events.push_back({nowMs(), host::EngineEvent::Level::Info, "train",
                                "step " + std::to_string(training.step) + ", loss " + std::to_string(training.loss)});
            notify = m_notify;
        }
    }
    if (notify)
        notify();
}

void TrainingEngine::stopTraining(ResultCallback done)
{
    std::lock_guard lock(m_mutex);
    if (!m_thread.joinable()) {
        std::thread([done] { done(""); }).detach();
        return;
    }
    m_stopDone = std::move(done);
    m_stop = true;
    m_paused = false;
    m_resume.notify_all();
}

void TrainingEngine::resume()
{
    m_paused = false;
    m_resume.notify_all();
}

std::map<std::string, std::string> TrainingEngine::governorSettings() const
{
    std::lock_guard lock(m_mutex);
    return m_settings;
}

void TrainingEngine::applyGovernorSettings(const std::map<std::string, std::string> &settings, ResultCallback done)
{
    {
        std::lock_guard lock(m_mutex);
        m_settings = settings; // recorded, not obeyed: the bench trains at full speed
    }
    std::thread([done] { done(""); }).detach();
}

host::EngineSnapshot TrainingEngine::snapshot() const
{
    std::lock_guard lock(m_mutex);
    return m_snapshot;
}

std::vector<host::EngineEvent> TrainingEngine::takeEvents()
{
    std::lock_guard lock(m_mutex);
    std::vector<host::EngineEvent> out(m_events.begin(), m_events.end());
    m_events.clear();
    return out;
}

void TrainingEngine::setNotifier(std::function<void()> notify)
{
    std::lock_guard lock(m_mutex);
    m_notify = std::move(notify);
}

double TrainingEngine::takeSamplesPerSecond()
{
    const int64_t samples = m_samples.load();
    const double seconds = m_seconds.load();
    const double rate = seconds > m_secondsTaken ? double(samples - m_samplesTaken) / (seconds - m_secondsTaken) : 0;
    m_samplesTaken = samples;
    m_secondsTaken = seconds;
    return rate;
}

int TrainingEngine::lowerOtherThreads() { return device::lowerOtherThreadsPriority(); }

} // namespace rookery::bench
