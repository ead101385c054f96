// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/swarm_job.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/device/governor.h"
#include "engine/device/thread_priority.h"
#include "engine/host/engine_views.h"
#include "engine/host/join_steps.h"
#include "engine/net/coordinator_address.h"
#include "engine/net/host_port.h"
#include "engine/net/identity.h"

namespace rookery::host {
namespace {

using Clock = std::chrono::steady_clock;
using Level = EngineEvent::Level;

std::string outcomeOf(const participant::SwarmNodeSummary &s)
{
    if (!s.completed)
        return "left the swarm: " + s.reason;
    return "the run is complete" +
           (s.testAccuracy >= 0 ? ", test accuracy " + format::percent(s.testAccuracy, 2) : std::string());
}

} // namespace

SwarmJob::SwarmJob(SwarmJobSettings settings, Events events)
    : TrainingJob(std::move(events))
    , m_settings(std::move(settings))
    , m_governor(std::make_shared<device::Governor>(forThisSwarm(m_settings.node.governor)))
{
    m_thread = std::thread([this] { main(); });
}

SwarmJob::~SwarmJob()
{
    requestStop();
    if (m_thread.joinable())
        m_thread.join();
}

void SwarmJob::requestStop()
{
    m_stop = true;
    // As WholeModelRun does: a stage held by the governor (paused) or one that does not
    // watch for aborts (a pipeline of one) sees the closed gate at its next step.
    m_governor->close("stopped: on request");
    std::lock_guard lock(m_mutex); // waiters check m_stop under it: no wake-up is lost
    m_wake.notify_all();
}

// The governor is thread-safe, and the node takes it as it is when it is made.
void SwarmJob::pause() { m_governor->pause(); }
void SwarmJob::resume() { m_governor->resume(); }
void SwarmJob::snooze(int minutes) { m_governor->snooze(std::chrono::minutes(minutes)); }

device::GovernorSettings SwarmJob::forThisSwarm(device::GovernorSettings settings) const
{
    // The caps on upload and download spare the volunteer's internet connection; a demo
    // swarm's traffic never leaves the machine, and a pipeline stage capped at 1 MiB/s
    // (the app's default) held the whole demo to a few steps a minute.
    if (m_settings.demo)
        for (device::Limits *l : {&settings.whenActive, &settings.whenIdle})
            l->uploadKiBps = l->downloadKiBps = 0;
    return settings;
}

void SwarmJob::setGovernorSettings(const device::GovernorSettings &settings)
{
    m_governor->setSettings(forThisSwarm(settings));
}

void SwarmJob::main()
{
    // The demo swarm's processes and the node's threads inherit this priority.
    if (m_settings.lowerPriority)
        device::lowerCallingThreadPriority();
    std::string outcome;
    bool failed = false;
    try {
        std::unique_ptr<launcher::SwarmLauncher> swarm;
        std::string address = m_settings.node.coordinator;
        if (m_settings.demo) {
            swarm = std::make_unique<launcher::SwarmLauncher>(
                *m_settings.demo, [this](const std::string &who, const std::string &line) { onLine(who, line); });
            say(Level::Info, "swarm",
                "starting the local demo swarm: a coordinator and " + std::to_string(m_settings.demo->nodes) +
                    " more nodes, each a process of its own");
            swarm->start();
            address = swarm->address();
        }
        const auto parsed = net::CoordinatorAddress::parse(address);
        ensurePrivateDirectory(m_settings.node.dataDir);
        const std::string selfId = net::Identity::loadOrCreate(m_settings.node.dataDir).nodeId();
        m_settings.node.coordinator = address;
        {
            std::lock_guard lock(m_mutex);
            m_address = address;
            m_where = net::bracketed(parsed.host) + ":" + std::to_string(parsed.port);
            m_selfId = selfId;
            if (!m_settings.demo) // the coordinator's default: its status API one port above
                m_statusPort = m_settings.statusPort ? m_settings.statusPort : uint16_t(parsed.port + 1);
        }
        outcome = supervise(swarm.get(), failed);
        if (swarm) {
            say(Level::Info, "swarm", "stopping the local demo swarm (each node saves a checkpoint first)");
            swarm->stop();
            const bool complete = m_nodeSummary && m_nodeSummary->completed;
            if (complete) { // a coordinator restarted on a finished run would stop every node at once
                std::error_code ignored;
                std::filesystem::remove_all(m_settings.demo->workDir / "coordinator", ignored);
                say(Level::Info, "swarm", "the demo run is complete: the next demo swarm starts a new one");
            }
        }
    } catch (const std::exception &e) {
        outcome = e.what();
        failed = true;
    }
    if (m_nodeThread.joinable()) {
        m_stop = true;
        m_nodeThread.join();
    }
    reportFinished(outcome, failed);
}

std::string SwarmJob::supervise(launcher::SwarmLauncher *swarm, bool &failed)
{
    if (m_stop)
        return "stopped on request";
    {
        participant::SwarmNode::Callbacks callbacks;
        const participant::SwarmNode::Callbacks &out = m_settings.console.swarm;
        callbacks.message = [this, &out](const std::string &text) {
            if (out.message)
                out.message(text);
            reportStarted(""); // it speaks once its data, database and identity are loaded
            say(Level::Info, "swarm", text);
        };
        callbacks.warning = [this, &out](const std::string &text) {
            if (out.warning)
                out.warning(text);
            say(Level::Warning, "swarm", text);
            std::lock_guard lock(m_mutex);
            m_peerProblem = text;
            m_peerProblemAt = Clock::now();
        };
        callbacks.join = [this](const participant::JoinState &j) {
            std::lock_guard lock(m_mutex);
            m_join = j;
        };
        callbacks.progress = [this, &out](const participant::StageProgress &p) {
            if (out.progress)
                out.progress(p);
            std::lock_guard lock(m_mutex);
            if (p.samplesTotal < m_progress.samplesTotal) { // a new stage session counts from 0
                m_samplesBefore += m_progress.samplesTotal;
                m_ringRoundsBefore += m_progress.ringRounds;
                m_ringSkippedBefore += m_progress.ringSkipped;
            }
            m_progress = p;
            m_progressAt = Clock::now();
        };
        std::lock_guard lock(m_mutex);
        m_node = std::make_unique<participant::SwarmNode>(m_settings.node, std::move(callbacks), m_governor);
    }
    m_nodeThread = std::thread([this] {
        if (m_settings.lowerPriority)
            device::lowerCallingThreadPriority();
        try {
            const participant::SwarmNodeSummary summary = m_node->run(&m_stop);
            if (m_settings.console.swarmDone)
                m_settings.console.swarmDone(summary);
            std::lock_guard lock(m_mutex);
            m_nodeSummary = summary;
        } catch (const std::exception &e) {
            reportStarted(e.what());
            std::lock_guard lock(m_mutex);
            m_nodeError = e.what();
        }
        m_nodeDone = true;
        m_wake.notify_all();
    });
    {
        const auto feed = startStatusFeed(); // the peer graph, read on a thread of its own
        while (!m_stop && !m_nodeDone) {
            if (swarm) {
                swarm->poll(std::chrono::milliseconds(200));
            } else {
                std::unique_lock lock(m_mutex);
                m_wake.wait_for(lock, std::chrono::milliseconds(250), [this] { return m_stop || m_nodeDone; });
            }
        }
    }
    // After a stop request the node saves a checkpoint, then returns. The demo swarm's
    // processes print all the while: a pipe nobody drains would block them mid-line.
    while (swarm && !m_nodeDone)
        swarm->poll(std::chrono::milliseconds(200));
    m_nodeThread.join();
    std::lock_guard lock(m_mutex);
    if (!m_nodeError.empty()) {
        failed = true;
        return m_nodeError;
    }
    failed = m_nodeSummary && m_nodeSummary->failed; // gave up after repeated stage failures
    return m_nodeSummary ? outcomeOf(*m_nodeSummary) : "stopped on request";
}

std::unique_ptr<SwarmStatusFeed> SwarmJob::startStatusFeed()
{
    SwarmStatusFeedSettings s;
    {
        std::lock_guard lock(m_mutex);
        if (m_statusPort == 0 || m_address.empty())
            return nullptr;
        const auto parsed = net::CoordinatorAddress::parse(m_address); // checked in main()
        s.statusHost = parsed.host;
        s.statusPort = m_statusPort;
        s.pin = parsed.sha256;
        s.selfId = m_selfId;
    }
    s.interval = m_settings.statusInterval;
    SwarmStatusFeed::Callbacks cb; // the engine lists the checkpoints itself
    cb.swarm = [this](const SwarmStatusView &view) {
        std::string said;
        {
            std::lock_guard lock(m_mutex);
            const std::string before = m_status ? m_status->self.reachability : std::string();
            m_status = view;
            if (view.self.reachability != before && !view.self.reachabilityNote.empty())
                said = view.self.reachability;
        }
        // Said once per change, loudly when peers cannot dial in: the node's pipeline
        // links then wait for ever, which looks like a stalled swarm.
        if (said == "direct")
            say(Level::Info, "swarm", "the coordinator reached this node: " + view.self.reachabilityNote);
        else if (said == "unreachable")
            say(Level::Warning, "swarm", "this node is not reachable: " + view.self.reachabilityNote);
    };
    cb.problem = [this](const std::string &problem) { // once per kind of failure
        if (!problem.empty())
            say(Level::Warning, "swarm", problem);
    };
    return std::make_unique<SwarmStatusFeed>(std::move(s), std::move(cb));
}

void SwarmJob::onLine(const std::string &who, const std::string &line)
{
    if (who == "coordinator")
        if (const uint16_t port = launcher::statusPortInLine(line)) {
            std::lock_guard lock(m_mutex);
            m_statusPort = port;
        }
    // Progress lines come every few seconds from every node, and "info" lines repeat
    // what the programs print themselves.
    if (line.rfind("step ", 0) == 0 || line.rfind("info ", 0) == 0)
        return;
    say(Level::Debug, "swarm", "[" + who + "] " + line);
}

JobView SwarmJob::view() const
{
    JobView v;
    std::lock_guard lock(m_mutex);
    const device::GovernorStatus status = m_governor->status();
    v.governor = governorView(status);
    const bool held = status.state == device::GovernorState::Paused;
    const bool fresh = Clock::now() - m_progressAt < std::chrono::seconds(3);
    v.computing = m_node && !m_nodeDone && !held && fresh && m_progress.samplesPerSecond > 0;
    if (m_status) {
        v.assignment = m_status->self;
        v.peers = m_status->peers;
        v.links = m_status->links;
    } else {
        v.assignment.mode = "swarm";
        v.peers.push_back({m_selfId, "this computer", 0, 0, "idle", 0, true});
    }
    v.assignment.swarm = m_settings.demo ? "local demo swarm on this computer" : m_address;
    if (!m_where.empty())
        v.join = joinSteps(m_join, {v.assignment.reachability, v.assignment.reachabilityNote}, m_where);
    for (auto &p : v.peers)
        if (p.self) {
            p.name = "this computer";
            p.state = held ? "paused" : v.computing ? "training" : "idle";
        }
    auto &t = v.training;
    t.step = m_progress.step;
    t.totalSteps = m_progress.totalSteps > 0 ? m_progress.totalSteps : m_status ? m_status->totalSteps : 0;
    t.loss = m_progress.loss > 0 ? m_progress.loss : m_status ? m_status->clusterLoss : 0;
    t.samplesPerSecond = v.computing ? m_progress.samplesPerSecond : 0;
    t.testAccuracy = m_progress.testAccuracy;
    t.staleness = m_progress.staleness;
    t.ringRounds = m_ringRoundsBefore + m_progress.ringRounds;
    t.ringSkipped = m_ringSkippedBefore + m_progress.ringSkipped;
    v.samplesDone = m_samplesBefore + m_progress.samplesTotal;
    if (!held && !v.computing) {
        // A stage that made no step lately waits for its neighbours, or, at nice 19 on a
        // busy machine, for the processor; from here the two look the same.
        const auto failed =
            std::find_if(v.join.begin(), v.join.end(), [](const JoinStepView &j) { return j.state == "failed"; });
        if (failed != v.join.end())
            v.waiting = "cannot join the swarm: " + failed->text;
        else if (!m_status || v.assignment.cluster < 0)
            v.waiting = "waiting for a place in the swarm";
        else if (v.assignment.stageCount > 1 && Clock::now() - m_peerProblemAt < std::chrono::minutes(1))
            v.waiting = "no step in the last 3 s: " + m_peerProblem;
        else if (v.assignment.stageCount > 1)
            v.waiting = "no step in the last 3 s: waiting for the pipeline's other stages or for the processor";
        else
            v.waiting = "no step in the last 3 s: waiting for the processor";
    }
    return v;
}

} // namespace rookery::host
