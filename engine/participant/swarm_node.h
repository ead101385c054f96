// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "engine/common/value_precision.h"
#include "engine/device/governor_settings.h"
#include "engine/net/wire_message.h"
#include "engine/participant/assigned_stage.h"
#include "engine/participant/join_state.h"

namespace rookery::device {
class Governor;
}

namespace rookery::participant {

/// Settings of a node that joins a swarm.
struct SwarmNodeSettings
{
    std::string coordinator;          ///< wss://host:port/#sha256=...
    std::string name;                 ///< for people; default: the host name
    std::filesystem::path dataDir;    ///< identity, profile cache, checkpoints
    std::filesystem::path datasetDir; ///< this machine's copy of Fashion-MNIST, if any
    /// The most the dataset shards fetched from the coordinator may take on disk, in
    /// <dataDir>/data-cache; the least recently used go first (what a stage uses stays).
    uint64_t dataCacheBytes = uint64_t(2) << 30;
    std::string bindAddress;   ///< where to listen for peers; "": every interface, IPv4 and IPv6
    uint16_t port = 0;         ///< 0: any free port (the last run's, when still free)
    std::string publicAddress; ///< "host" or "host:port" peers reach this node at; "": the
                               ///< address the coordinator sees, with the listening port
    /// Ask the home router to forward the peer port (UPnP IGD, then NAT-PMP), advertise
    /// the mapped port, renew it while the node runs and remove it at the end. Not done
    /// with a public address given or when bound to loopback.
    bool mapPort = true;
    /// Run a relay for other volunteers on this port (opt in; 0: none). The coordinator
    /// sends pairs to it only while peers can dial this node. Mapped on the router with
    /// the peer port.
    uint16_t relayPort = 0;
    uint64_t relayBytesPerSecondPerPair = 0; ///< each direction; 0: no cap
    /// What the peer links this node dials ask to carry activations and gradients as:
    /// half-size 16-bit values (bf16, the default: bench_compression measured no
    /// accuracy lost over 3 seeds; fp16) or float32 (None). Weights stay float32. The
    /// other end agrees unless it refuses compression.
    net::Compression peerCompression = net::Compression::Bf16;
    /// How the ring chunks this node sends travel: blocks of int8 codes (the default since
    /// 2026-12-07: as accurate as bf16 and float32 in bench_wan at half bf16's bytes), int4
    /// codes, bf16 (differences from the weights after the ring's last round; the first
    /// round of a ring goes as float32), or float32. Each member chooses for itself; the
    /// members still end each round equal.
    ValuePrecision ringPrecision = ValuePrecision::Int8;
    device::GovernorSettings governor;
    int64_t checkpointEvery = 50; ///< optimizer steps
    /// ... and at least this long apart (0: every checkpointEvery steps): a crash loses at
    /// most this much training (BOINC checkpoints at most every 60 s by default). Every
    /// 50 steps cost a fast 2-stage pipeline a fifth of its speed (bench_swarm).
    std::chrono::seconds checkpointInterval{20};
    int keepCheckpoints = 3;
    int64_t evaluateEvery = 200; ///< optimizer steps (roots only)
    int64_t evaluateSamples = 0; ///< a root tests on the first this many test samples; 0: all
    bool exitWhenDone = true;    ///< leave the swarm once the run is complete
};

/// What a node did, when run() returns.
struct SwarmNodeSummary
{
    bool completed = false;   ///< the run finished (not stopped early)
    double testAccuracy = -1; ///< the root's final evaluation, when this node was a root
    int64_t step = 0;
    std::string reason;  ///< why it stopped
    bool failed = false; ///< it gave up after repeated failures of its stage
};

/// A volunteer node in a swarm: registers with the coordinator (proving its identity
/// key), keeps the links to its pipeline neighbours and ring peers, trains the stage
/// it is assigned under the resource governor, averages over its rings, checkpoints
/// to SQLite, follows new assignments as the coordinator re-plans, and resumes from its
/// checkpoint after a restart.
///
/// Thread safety: run() on one thread (the control thread); stop flags and status()
/// from any thread. Callbacks come from the control and stage threads.
class SwarmNode
{
public:
    struct Callbacks
    {
        std::function<void(const std::string &)> message;
        /// What goes wrong on the way to the peers, as warnings: a neighbour reached only
        /// through the relay, a relay refused, no neighbour reachable at all.
        std::function<void(const std::string &)> warning;
        std::function<void(const StageProgress &)> progress;
        /// Each change in how far the node has got in joining (connected, registered,
        /// placed), from the node's threads, one at a time.
        std::function<void(const JoinState &)> join;
    };

    /// `governor`: the one every stage passes, shared with a caller that may hold it
    /// before the node exists; made from settings.governor when null.
    SwarmNode(SwarmNodeSettings settings, Callbacks callbacks, std::shared_ptr<device::Governor> governor = nullptr);
    ~SwarmNode();
    SwarmNode(const SwarmNode &) = delete;
    SwarmNode &operator=(const SwarmNode &) = delete;

    /// Joins and trains until the run is complete (with exitWhenDone), the coordinator
    /// stops this node, or *stop becomes true (checkpoints, then returns; the
    /// coordinator keeps the assignment for a quick restart). Throws rookery::Error for
    /// bad settings, data or database before joining.
    SwarmNodeSummary run(const std::atomic<bool> *stop);

    /// The resource governor every stage of this node passes: pause, resume, snooze and
    /// new settings from any thread. Made in the constructor when not given, which then
    /// throws rookery::Error for invalid governor settings.
    device::Governor &governor();

    struct Impl;

private:
    std::unique_ptr<Impl> d;
};

} // namespace rookery::participant
