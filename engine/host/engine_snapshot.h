// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rookery::host {

/// What the machine is, as measured (a flat copy of the device profile for display).
struct DeviceView
{
    bool measured = false;
    std::string cpuModel;
    int physicalCores = 0;
    int logicalCores = 0;
    int64_t ramTotalBytes = 0;
    int64_t ramAvailableBytes = 0;
    double gflopsOneThread = 0;
    double gflopsAllThreads = 0;
    double memoryBandwidthGBs = 0;
    int64_t diskFreeBytes = 0;
    std::vector<std::string> gpus; ///< "NVIDIA H200, 139 GiB, 700 GFLOP/s"
    int64_t measuredAtMs = 0;
    bool operator==(const DeviceView &) const = default;
};

/// Where this node stands in the swarm.
struct AssignmentView
{
    std::string mode;  ///< "idle", "local", "swarm"
    std::string swarm; ///< coordinator address, or "this machine"
    int cluster = -1;
    int clusterCount = 0;
    int stage = -1;
    int stageCount = 0;
    std::string role;                ///< "root", "middle", "leaf", "whole model"
    std::vector<std::string> layers; ///< "Linear(784->512)", ...
    std::string model;               ///< the model's name: "mlp", "cnn"
    std::string job;                 ///< the job's name, when the coordinator runs a job file
    int modelLayers = 0;             ///< the whole model's
    int64_t modelParameters = 0;
    int64_t stageParameters = 0;   ///< in this node's layers
    uint64_t stageMemoryBytes = 0; ///< what the plan gives this node's stage (0: not known)
    /// Whether peers can dial this node, as the coordinator found: "" (not known),
    /// "checking", "direct", "unreachable"; and why, in words.
    std::string reachability;
    std::string reachabilityNote;
    bool operator==(const AssignmentView &) const = default;
};

/// One step of joining a swarm, for the desktop's join steps: "connect", "register",
/// "reach" (whether peers can dial this node; "relayed" when not: it dials them, and
/// links to peers that cannot be dialled either go through a relay) and
/// "assign", each with its state and a sentence for people.
struct JoinStepView
{
    std::string step;  ///< "connect", "register", "reach", "assign"
    std::string state; ///< "pending", "working", "done", "relayed", "failed"
    std::string text;  ///< "connected to 198.51.101.1:7400", or what went wrong and what to do
    bool operator==(const JoinStepView &) const = default;
};

/// The governor's verdict, for display: a state word and a sentence.
struct GovernorView
{
    std::string state;  ///< "running", "throttled", "paused", "waiting", "stopped"
    std::string reason; ///< "throttled: user active (CPU 25%)"
    bool pausedByUser = false;
    int64_t snoozedUntilMs = 0;
    int cpuPercent = 100;
    int cores = 0;
    bool operator==(const GovernorView &) const = default;
};

struct TrainingView
{
    int64_t step = 0;
    int64_t totalSteps = 0;
    double loss = 0; ///< 0 while unknown (a swarm stage learns it from its pipeline's leaf)
    double samplesPerSecond = 0;
    double testAccuracy = -1; ///< -1 until evaluated
    double etaSeconds = -1;
    double staleness = 0;    ///< mean optimizer versions between forward and backward
    int64_t ringRounds = 0;  ///< swarm: averaging rounds completed by this process
    int64_t ringSkipped = 0; ///< swarm: rounds abandoned (a member away or silent)
    bool operator==(const TrainingView &) const = default;
};

/// Samples processed and compute time given, kept across restarts.
struct ContributionView
{
    int64_t samplesToday = 0;
    int64_t samplesTotal = 0;
    double computeHoursToday = 0;
    double computeHoursTotal = 0;
    bool operator==(const ContributionView &) const = default;
};

/// One peer in the swarm graph.
struct PeerView
{
    std::string id;
    std::string name;
    int cluster = 0;
    int stage = 0;
    std::string state; ///< "training", "idle", "paused", "lost"
    double samplesPerSecond = 0;
    bool self = false;
    bool operator==(const PeerView &) const = default;
};

struct PeerLinkView
{
    std::string from;
    std::string to;
    enum class Kind { Pipeline, Ring } kind = Kind::Pipeline;
    bool operator==(const PeerLinkView &) const = default;
};

/// A saved checkpoint, for the list in the desktop app.
struct CheckpointView
{
    int64_t id = 0;
    std::string run;
    int64_t step = 0;
    int64_t createdAtMs = 0;
    std::string model;
    int64_t bytes = 0;
    bool operator==(const CheckpointView &) const = default;
};

/// Everything the desktop app shows, as one value. The engine publishes a new one a few
/// times a second; the UI copies it and never reaches into the engine.
struct EngineSnapshot
{
    int64_t sequence = 0; ///< increases with every publication
    bool consentGiven = false;
    bool running = false; ///< a training job exists (it may be paused)
    DeviceView device;
    AssignmentView assignment;
    GovernorView governor;
    TrainingView training;
    ContributionView contribution;
    std::vector<PeerView> peers;
    std::vector<PeerLinkView> links;
    std::vector<JoinStepView> join;          ///< joining a swarm (the last one joined); empty otherwise
    std::vector<CheckpointView> checkpoints; ///< newest first
    std::string lastError;                   ///< empty when all is well
    bool operator==(const EngineSnapshot &) const = default;
};

/// A log line for the event log.
struct EngineEvent
{
    int64_t timeMs = 0;
    enum class Level { Debug, Info, Warning, Error } level = Level::Info;
    std::string area; ///< "train", "store", "net", "governor", ...
    std::string message;
    bool operator==(const EngineEvent &) const = default;
};

} // namespace rookery::host
