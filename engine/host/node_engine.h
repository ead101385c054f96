// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/host/engine_api.h"
#include "engine/host/job_console.h"

namespace rookery::host {

/// The local demo swarm the desktop app starts: a coordinator and nodes on this
/// machine (rookery-coordinator and rookery-node), of which the app's own node is one.
struct DemoSwarmSettings
{
    int clusterSize = 2; ///< pipeline stages per cluster
    /// The engine adds --expect-nodes: the first plan comes once every node has
    /// registered, or after --first-plan-delay-ms if one never does.
    std::vector<std::string> coordinatorArgs = {
        "--model", "mlp", "--steps", "50000", "--averaging-interval", "10", "--first-plan-delay-ms", "60000"};
    std::vector<std::string> nodeArgs = {"--max-cores", "1"}; ///< for the child nodes
};

/// Where the engine keeps things, what it trains, and how its host wants it run.
struct NodeEngineSettings
{
    std::filesystem::path dataDir;    ///< rookery.db (checkpoints, profile, contribution), identity, demo swarm
    std::filesystem::path datasetDir; ///< Fashion-MNIST's .gz files
    std::filesystem::path binDir;     ///< rookery-node and rookery-coordinator; empty: next to this program
    /// startLocal's run. Its dataDir, datasetDir and governor are the engine's.
    WholeModelSettings local;
    /// A run already at `local.steps` trains that many steps further (the desktop's
    /// "start"), instead of saying it is complete (rookery-node's --steps).
    bool extendFinishedRuns = true;
    /// joinSwarm's node. Its coordinator, dataDir, datasetDir and governor are the engine's.
    participant::SwarmNodeSettings swarm;
    /// The coordinator's status API port, for the peer graph; 0: the coordinator's port + 1.
    uint16_t statusPort = 0;
    DemoSwarmSettings demo;
    device::GovernorSettings governor; ///< the limits in force when the engine starts
    /// Measure the capability profile when consent is given (the desktop shows it); a
    /// swarm node measures it anyway before it registers.
    bool measureAtConsent = true;
    /// Jobs train at nice 19, as a desktop app's background work should; a headless
    /// node leaves its priority to its service manager.
    bool lowerJobPriority = true;
    JobConsole console;
    std::chrono::milliseconds publishInterval{250};
    std::chrono::seconds contributionFlushInterval{10};
};

/// The node host, one for the desktop app and rookery-node alike: consent, training the
/// whole model here (WholeModelRun), this machine as a swarm node (SwarmNode), the local
/// demo swarm (SwarmLauncher plus this node), the resource governor, the capability
/// profile, the checkpoints and the volunteer's contribution, all behind EngineApi.
///
/// Commands are queued to the engine's own thread and return at once; training runs on
/// the job's threads (at nice 19 unless lowerJobPriority is off). The engine thread
/// publishes a snapshot every publishInterval and calls the notifier then when events
/// are waiting or a command changed something. Nothing computes before
/// setConsent(true): the capability profile is measured (or read from its cache) only
/// then, when measureAtConsent.
///
/// Thread safety: every method may be called from any thread (EngineApi). Result
/// callbacks and the notifier are called on the engine's thread. Destroying the engine
/// stops the job (it checkpoints) and waits for it.
class NodeEngine final : public EngineApi
{
public:
    explicit NodeEngine(NodeEngineSettings settings);
    ~NodeEngine() override;
    NodeEngine(const NodeEngine &) = delete;
    NodeEngine &operator=(const NodeEngine &) = delete;

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
    EngineSnapshot snapshot() const override;
    std::vector<EngineEvent> takeEvents() override;
    void setNotifier(std::function<void()> notify) override;

    struct Impl;

private:
    std::unique_ptr<Impl> d;
};

/// The settings for this machine's user: defaultDataDir(), the Debian Fashion-MNIST
/// directory, a long local run (checkpoints every 500 steps).
NodeEngineSettings defaultNodeEngineSettings();

} // namespace rookery::host
