// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/host.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/host/job_console.h"
#include "engine/host/swarm_status.h"
#include "engine/host/training_job.h"
#include "engine/launcher/swarm_launcher.h"
#include "engine/participant/swarm_node.h"

namespace rookery::host {

struct SwarmJobSettings
{
    participant::SwarmNodeSettings node; ///< node.coordinator is ignored with a demo swarm
    /// Starts this swarm on the machine first (a coordinator and nodes as child
    /// processes) and joins it; the app's node is one more member.
    std::optional<launcher::SwarmLauncherSettings> demo;
    std::chrono::milliseconds statusInterval{2000}; ///< how often to read the coordinator's status
    uint16_t statusPort = 0;   ///< the coordinator's status API; 0: its port + 1 (the demo's: as it prints)
    JobConsole console;        ///< hears the node as well (rookery-node prints it)
    bool lowerPriority = true; ///< nice 19 for the node's threads and the demo's processes
};

/// This machine as a node of a swarm: a SwarmNode on a thread of its own, supervised by
/// the job's thread, which also drives the demo swarm's child processes and reads the
/// coordinator's status API for the peer graph and this node's place in it. Pause,
/// snooze and new limits go to the node's governor, so its stage holds within one
/// microbatch and stays in the swarm.
///
/// Thread safety: as TrainingJob.
class SwarmJob final : public TrainingJob
{
public:
    SwarmJob(SwarmJobSettings settings, Events events);
    ~SwarmJob() override;

    void requestStop() override;
    void pause() override;
    void resume() override;
    void snooze(int minutes) override;
    void setGovernorSettings(const device::GovernorSettings &settings) override;
    JobView view() const override;

private:
    device::GovernorSettings forThisSwarm(device::GovernorSettings settings) const;
    void main();
    std::string supervise(launcher::SwarmLauncher *swarm, bool &failed);
    std::unique_ptr<SwarmStatusFeed> startStatusFeed();
    void onLine(const std::string &who, const std::string &line);

    SwarmJobSettings m_settings;
    std::atomic<bool> m_stop{false};
    std::condition_variable m_wake;
    // The node's governor, made with the job: what the user asks before the node exists
    // (the demo swarm takes a while to start) holds it from the start.
    const std::shared_ptr<device::Governor> m_governor;
    std::unique_ptr<participant::SwarmNode> m_node; // made before m_nodeThread starts, destroyed after it ends
    std::thread m_nodeThread;
    std::atomic<bool> m_nodeDone{false};

    mutable std::mutex m_mutex;
    std::string m_address;
    std::string m_where; ///< the coordinator's host:port, for the join steps
    participant::JoinState m_join;
    std::string m_peerProblem; ///< the node's last warning about its peers, for the status line
    std::chrono::steady_clock::time_point m_peerProblemAt{};
    std::string m_selfId;
    uint16_t m_statusPort = 0;
    std::optional<participant::SwarmNodeSummary> m_nodeSummary;
    std::string m_nodeError;
    participant::StageProgress m_progress;
    std::chrono::steady_clock::time_point m_progressAt{};
    // Counts of earlier stage sessions: a new one counts from 0 again.
    int64_t m_samplesBefore = 0;
    int64_t m_ringRoundsBefore = 0;
    int64_t m_ringSkippedBefore = 0;
    std::optional<SwarmStatusView> m_status;

    std::thread m_thread;
};

} // namespace rookery::host
