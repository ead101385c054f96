// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rookery::launcher {

/// A swarm on this machine: a coordinator and N nodes as child processes, for the demo,
/// the integration tests and the desktop app's "local demo swarm".
struct SwarmLauncherSettings
{
    int nodes = 4;
    int clusterSize = 2;           ///< stages per cluster (the coordinator's --cluster-size); 0: planner decides
    std::filesystem::path workDir; ///< one data directory per process below it
    std::filesystem::path binDir;  ///< where rookery-coordinator and rookery-node are; empty: next to this program
    std::filesystem::path datasetDir;
    std::vector<std::string> coordinatorArgs; ///< e.g. --model, --steps, --averaging-interval
    std::vector<std::string> nodeArgs;        ///< e.g. --max-cores 1
    /// Extra arguments for node i (counted from 1), after nodeArgs: e.g. a CPU cap for one.
    std::map<int, std::vector<std::string>> nodeExtraArgs;
    bool restartCrashed = true;               ///< a node killed by a signal is started again (it resumes)
    /// Extra NAME=VALUE environment entries for node i (counted from 1): testing options
    /// such as ROOKERY_TESTING_MISBEHAVE for one node of the swarm.
    std::map<int, std::vector<std::string>> nodeEnvironment;
};

/// Starts and supervises the processes. Output lines of every child are collected with
/// a prefix ("[node 2] ...").
///
/// Thread safety: one thread drives it, and must outlive it: the children get SIGTERM
/// when the thread that started them ends, so a killed launcher leaves nothing running.
class SwarmLauncher
{
public:
    using LineHandler = std::function<void(const std::string &who, const std::string &line)>;

    explicit SwarmLauncher(SwarmLauncherSettings settings, LineHandler lines = {});
    /// Stops every child still running (SIGTERM, then SIGKILL after 10 s).
    ~SwarmLauncher();
    SwarmLauncher(const SwarmLauncher &) = delete;
    SwarmLauncher &operator=(const SwarmLauncher &) = delete;

    /// Starts the coordinator, waits for its address, then starts the nodes. Throws
    /// rookery::Error when a program is missing or the coordinator does not come up.
    void start(std::chrono::seconds timeout = std::chrono::seconds(30));
    /// The coordinator's address (wss://...#sha256=...), once started.
    const std::string &address() const;

    /// Reads the children's output for up to `wait`, reaps children and restarts
    /// crashed nodes. Returns false once every node has exited by itself.
    bool poll(std::chrono::milliseconds wait);
    /// Node i's process id (0 when not running).
    int nodePid(int i) const;
    int nodeRestarts(int i) const;
    /// Exit codes of the nodes that exited (-1 while running or when killed).
    std::vector<int> nodeExitCodes() const;
    /// Stops everything: nodes first (SIGTERM: they checkpoint), then the coordinator.
    void stop();

    struct Impl;

private:
    std::unique_ptr<Impl> d;
};

/// The port in rookery-coordinator's "status: https://HOST:PORT/v1/status" line; 0 for
/// any other line.
uint16_t statusPortInLine(const std::string &line);

/// The directory of the running program (to find the sibling programs).
std::filesystem::path programDirectory();

} // namespace rookery::launcher
