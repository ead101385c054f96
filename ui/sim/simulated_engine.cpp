// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/sim/simulated_engine.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "engine/common/wall_clock.h"
#include "ui/settings/settings_fields.h"

namespace rookery::ui {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr double kTick = 0.25;           // seconds between publications
constexpr double kSamplesPerCore = 2500; // invented throughput at 100% CPU
constexpr int64_t kBatch = 64;
constexpr int64_t kTotalSteps = 20000;

host::DeviceView probeLightly()
{
    host::DeviceView d;
    d.measured = true;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) {
            d.cpuModel = line.substr(line.find(':') + 2);
            break;
        }
    d.logicalCores = int(std::max(1u, std::thread::hardware_concurrency()));
    d.physicalCores = std::max(1, d.logicalCores / 2);
    d.ramTotalBytes = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    d.ramAvailableBytes = int64_t(sysconf(_SC_AVPHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    d.gflopsOneThread = 24.0; // invented: the simulation measures nothing
    d.gflopsAllThreads = 24.0 * d.physicalCores * 0.85;
    d.memoryBandwidthGBs = 18.0;
    std::error_code ec;
    d.diskFreeBytes = int64_t(std::filesystem::space("/", ec).available);
    d.measuredAtMs = nowMs();
    return d;
}

const std::vector<std::string> kLayers[3] = {
    {"Flatten", "Linear(784->512)", "ReLU"}, {"Linear(512->512)", "ReLU"}, {"Linear(512->10)"}};
const char *kRoles[3] = {"root", "middle", "leaf"};
const char *kNames[] = {"ada", "basil", "cleo", "dara", "emil", "fenna", "gus", "hana", "ivo", "jun", "kai", "lumi"};

} // namespace

SimulatedEngine::SimulatedEngine()
{
    m_state.device = probeLightly();
    m_state.assignment.mode = "idle";
    m_state.governor.state = "stopped";
    m_state.governor.cores = m_state.device.logicalCores;
    m_settings = defaultGovernorSettings();
    m_published = m_state;
    m_thread = std::thread([this] { run(); });
}

SimulatedEngine::~SimulatedEngine()
{
    {
        std::lock_guard lock(m_mutex);
        m_quit = true;
    }
    m_wake.notify_all();
    m_thread.join();
}

double SimulatedEngine::lossAt(int64_t step) { return 0.32 + 1.98 * std::exp(-double(step) / 900.0); }

void SimulatedEngine::post(std::function<void()> job)
{
    {
        std::lock_guard lock(m_mutex);
        m_jobs.push_back(std::move(job));
    }
    m_wake.notify_all();
}

void SimulatedEngine::run()
{
    auto last = SteadyClock::now();
    std::unique_lock lock(m_mutex);
    while (!m_quit) {
        m_wake.wait_for(lock, std::chrono::duration<double>(kTick), [this] { return m_quit || !m_jobs.empty(); });
        while (!m_jobs.empty()) {
            auto job = std::move(m_jobs.front());
            m_jobs.pop_front();
            lock.unlock();
            job();
            lock.lock();
        }
        const auto now = SteadyClock::now();
        const double elapsed = std::chrono::duration<double>(now - last).count();
        if (elapsed >= kTick) {
            last = now;
            lock.unlock();
            tick(elapsed);
            publish(false);
            lock.lock();
        }
    }
}

void SimulatedEngine::tick(double seconds)
{
    auto &s = m_state;
    const bool snoozed = s.governor.snoozedUntilMs > nowMs();
    if (!snoozed && s.governor.snoozedUntilMs > 0) {
        s.governor.snoozedUntilMs = 0;
        say(host::EngineEvent::Level::Info, "governor", "snooze over: training resumes");
    }
    const bool working = s.running && !s.governor.pausedByUser && !snoozed;
    s.governor.state = !s.running ? "stopped" : working ? (m_cpuPercent < 100 ? "throttled" : "running") : "paused";
    s.governor.reason = !working ? (s.running ? "paused by you" : "")
                                 : "user active: " + std::to_string(m_cpuPercent) + "% CPU on all " +
                                       std::to_string(s.device.logicalCores) + " cores";
    std::normal_distribution<double> noise(1.0, 0.04);
    const double rate = working ? kSamplesPerCore * s.device.physicalCores * m_cpuPercent / 100.0 * noise(m_random) : 0;
    auto &t = s.training;
    t.samplesPerSecond = rate;
    m_stepCarry += rate * seconds / kBatch;
    const auto steps = int64_t(m_stepCarry);
    m_stepCarry -= double(steps);
    if (steps > 0) {
        t.step = std::min(kTotalSteps, t.step + steps);
        t.loss = lossAt(t.step) * noise(m_random);
        t.testAccuracy = 0.91 - 0.75 * std::exp(-double(t.step) / 1100.0);
        t.etaSeconds = rate > 0 ? double(kTotalSteps - t.step) * kBatch / rate : -1;
        s.contribution.samplesToday += steps * kBatch;
        s.contribution.samplesTotal += steps * kBatch;
        if (t.step / 400 != (t.step - steps) / 400)
            saveCheckpoint();
    }
    if (working) {
        const double hours = seconds / 3600.0 * s.device.physicalCores * m_cpuPercent / 100.0;
        s.contribution.computeHoursToday += hours;
        s.contribution.computeHoursTotal += hours;
    }
    for (auto &p : s.peers) {
        if (p.self) {
            p.state = working ? "training" : s.running ? "paused" : "idle";
            p.samplesPerSecond = rate;
        } else if (p.state == "training") {
            p.samplesPerSecond = kSamplesPerCore * 2 * noise(m_random);
        }
    }
}

void SimulatedEngine::begin(const std::string &mode, const std::string &swarm, int peers, int64_t fromStep)
{
    auto &s = m_state;
    s.running = true;
    s.governor.pausedByUser = false;
    s.training = {};
    s.training.step = fromStep;
    s.training.totalSteps = kTotalSteps;
    s.training.loss = lossAt(fromStep);
    s.peers.clear();
    s.links.clear();
    auto &a = s.assignment;
    a.mode = mode;
    a.swarm = swarm;
    a.model = "mlp";
    a.job = mode == "local" ? "" : "fashion-mnist-mlp";
    a.modelLayers = 6;
    a.modelParameters = 669'706;
    if (mode == "local") {
        a.cluster = 0, a.clusterCount = 1, a.stage = 0, a.stageCount = 1, a.role = "whole model";
        a.layers = {"Flatten", "Linear(784->512)", "ReLU", "Linear(512->512)", "ReLU", "Linear(512->10)"};
        a.stageParameters = a.modelParameters;
        s.peers.push_back({"self", "this computer", 0, 0, "training", 0, true});
    } else {
        // Clusters of three stages; this computer holds stage 2 of cluster 2.
        const int clusters = std::max(1, (peers + 2) / 3);
        a.cluster = std::min(1, clusters - 1), a.clusterCount = clusters, a.stage = 1, a.stageCount = 3;
        a.role = kRoles[1];
        a.layers = kLayers[1];
        a.stageParameters = 262'656; // Linear(512->512)
        a.stageMemoryBytes = uint64_t(12) << 20;
        for (int c = 0; c < clusters; ++c)
            for (int k = 0; k < 3; ++k) {
                const int i = c * 3 + k;
                const bool self = c == a.cluster && k == a.stage;
                const char *state = self ? "training" : i == 5 ? "idle" : i == 7 ? "lost" : "training";
                s.peers.push_back(
                    {"p" + std::to_string(i), self ? "this computer" : kNames[i % 12], c, k, state, 0, self});
                if (k > 0)
                    s.links.push_back({"p" + std::to_string(i - 1), "p" + std::to_string(i)});
            }
        for (int k = 0; clusters > 1 && k < 3; ++k)
            for (int c = 0; c < clusters; ++c)
                if (clusters > 2 || c == 0)
                    s.links.push_back({"p" + std::to_string(c * 3 + k),
                                       "p" + std::to_string(((c + 1) % clusters) * 3 + k),
                                       host::PeerLinkView::Kind::Ring});
    }
    say(host::EngineEvent::Level::Info, "train",
        "training " + a.model + " from step " + std::to_string(fromStep) + " (" + mode + ")");
}

void SimulatedEngine::end(const char *why)
{
    if (!m_state.running)
        return;
    saveCheckpoint();
    m_state.running = false;
    m_state.training.samplesPerSecond = 0;
    m_state.assignment = {};
    m_state.assignment.mode = "idle";
    m_state.peers.clear();
    m_state.links.clear();
    say(host::EngineEvent::Level::Info, "train", std::string("stopped: ") + why);
}

void SimulatedEngine::saveCheckpoint()
{
    host::CheckpointView c;
    c.id = m_nextCheckpointId++;
    c.run = m_state.assignment.mode == "local" ? "local" : "swarm";
    c.step = m_state.training.step;
    c.createdAtMs = nowMs();
    c.model = "mlp";
    c.bytes = 4'240'000;
    auto &list = m_state.checkpoints;
    list.insert(list.begin(), c);
    if (list.size() > 5)
        list.resize(5);
    say(host::EngineEvent::Level::Info, "store", "checkpoint saved at step " + std::to_string(c.step));
}

void SimulatedEngine::say(host::EngineEvent::Level level, const char *area, std::string message)
{
    std::lock_guard lock(m_mutex);
    m_events.push_back({nowMs(), level, area, std::move(message)});
    while (m_events.size() > 1000)
        m_events.pop_front();
}

void SimulatedEngine::publish(bool notify)
{
    std::function<void()> notifier;
    {
        std::lock_guard lock(m_mutex);
        ++m_state.sequence;
        m_published = m_state;
        if (notify || !m_events.empty())
            notifier = m_notify;
    }
    if (notifier)
        notifier();
}

std::string SimulatedEngine::validate(const std::map<std::string, std::string> &settings)
{
    for (const auto &[key, value] : settings) {
        const SettingsField *f = findSettingsField(key);
        if (!f)
            return "unknown governor setting '" + key + "'";
        if (f->kind != SettingsField::Kind::Integer)
            continue;
        char *end = nullptr;
        const long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0')
            return "governor setting '" + key + "' must be a whole number, not '" + value + "'";
        if (v < f->min || v > f->max)
            return "governor setting '" + key + "' must be between " + std::to_string(f->min) + " and " +
                   std::to_string(f->max) + ", not " + value;
    }
    return {};
}

// ---- commands: each runs on the engine thread ----

void SimulatedEngine::setConsent(bool given)
{
    post([this, given] {
        m_state.consentGiven = given;
        if (!given)
            end("consent withdrawn");
        publish(true);
    });
}

void SimulatedEngine::startLocal(ResultCallback done) { startDemoSwarm(0, std::move(done)); }

void SimulatedEngine::joinSwarm(const std::string &address, ResultCallback done)
{
    post([this, address, done = std::move(done)] {
        if (!m_state.consentGiven)
            return done("consent has not been given");
        end("joining another swarm");
        begin("swarm", address, 9, 0);
        publish(true);
        done("");
    });
}

void SimulatedEngine::startDemoSwarm(int nodes, ResultCallback done)
{
    post([this, nodes, done = std::move(done)] {
        if (!m_state.consentGiven)
            return done("consent has not been given");
        end("starting anew");
        const int64_t from = m_state.checkpoints.empty() ? 0 : m_state.checkpoints.front().step;
        if (nodes == 0)
            begin("local", "this computer", 1, from);
        else
            begin("swarm", "local demo swarm (simulated)", std::max(nodes, 9), from);
        publish(true);
        done("");
    });
}

void SimulatedEngine::stopTraining(ResultCallback done)
{
    post([this, done = std::move(done)] {
        end("stopped by you");
        publish(true);
        done("");
    });
}

void SimulatedEngine::pause()
{
    post([this] {
        m_state.governor.pausedByUser = true;
        say(host::EngineEvent::Level::Info, "governor", "paused by you");
        tick(0);
        publish(true);
    });
}

void SimulatedEngine::resume()
{
    post([this] {
        m_state.governor.pausedByUser = false;
        m_state.governor.snoozedUntilMs = 0;
        say(host::EngineEvent::Level::Info, "governor", "resumed by you");
        tick(0);
        publish(true);
    });
}

void SimulatedEngine::snooze(int minutes)
{
    post([this, minutes] {
        m_state.governor.snoozedUntilMs = nowMs() + int64_t(minutes) * 60'000;
        say(host::EngineEvent::Level::Info, "governor", "snoozed for " + std::to_string(minutes) + " minutes");
        tick(0);
        publish(true);
    });
}

std::map<std::string, std::string> SimulatedEngine::governorSettings() const
{
    std::lock_guard lock(m_mutex);
    return m_settings;
}

void SimulatedEngine::applyGovernorSettings(const std::map<std::string, std::string> &settings, ResultCallback done)
{
    post([this, settings, done = std::move(done)] {
        const std::string error = validate(settings);
        if (!error.empty())
            return done(error);
        {
            std::lock_guard lock(m_mutex);
            for (const auto &[k, v] : settings)
                m_settings[k] = v;
            m_cpuPercent = std::stoi(m_settings["active.cpu-percent"]);
        }
        say(host::EngineEvent::Level::Info, "governor", "limits applied");
        publish(true);
        done("");
    });
}

void SimulatedEngine::resumeCheckpoint(int64_t id, ResultCallback done)
{
    post([this, id, done = std::move(done)] {
        if (!m_state.consentGiven)
            return done("consent has not been given");
        for (const auto &c : m_state.checkpoints)
            if (c.id == id) {
                end("resuming a checkpoint");
                begin(c.run == "local" ? "local" : "swarm", c.run == "local" ? "this computer" : "local demo swarm", 9,
                      c.step);
                publish(true);
                return done("");
            }
        done("there is no checkpoint " + std::to_string(id));
    });
}

void SimulatedEngine::deleteCheckpoint(int64_t id, ResultCallback done)
{
    post([this, id, done = std::move(done)] {
        auto &list = m_state.checkpoints;
        const auto before = list.size();
        std::erase_if(list, [id](const auto &c) { return c.id == id; });
        publish(true);
        done(list.size() < before ? "" : "there is no checkpoint " + std::to_string(id));
    });
}

host::EngineSnapshot SimulatedEngine::snapshot() const
{
    std::lock_guard lock(m_mutex);
    return m_published;
}

std::vector<host::EngineEvent> SimulatedEngine::takeEvents()
{
    std::lock_guard lock(m_mutex);
    std::vector<host::EngineEvent> out(m_events.begin(), m_events.end());
    m_events.clear();
    return out;
}

void SimulatedEngine::setNotifier(std::function<void()> notify)
{
    std::lock_guard lock(m_mutex);
    m_notify = std::move(notify);
}

} // namespace rookery::ui
