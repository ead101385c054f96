// SPDX-License-Identifier: GPL-3.0-or-later
// What the coordinator tells a node: the run it trains and its place in the swarm.
// Plain values, free of LibTorch, Boost and the wire schema, for the node host, the swarm participant and the UI.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/data/epoch_sampler.h"
#include "engine/model/model_spec.h"
#include "engine/train/optimizer_config.h"

namespace rookery::coord {

/// Another node as this node reaches it: its id (the SHA-256 of its public key, which
/// its CA-signed certificate proves) and the "host:port" of its peer listener. Empty
/// (no node id) when unset.
struct PeerRef
{
    std::string nodeId;
    std::string address;
    bool unreachable = false; ///< peers cannot dial it: it dials them
    bool empty() const { return nodeId.empty(); }
    /// The same node at the same address; whether it can be dialled is compared apart
    /// (Assignment::sameReachability), since a change of it needs no new stage.
    bool operator==(const PeerRef &o) const { return nodeId == o.nodeId && address == o.address; }
};

/// A ring that averages layers [firstLayer, lastLayer) over all clusters: `size`
/// members hold those layers, one per cluster, in ring order. A node hears only of its
/// place and its two neighbours: it sends to `next` and receives from `previous` (the
/// same node in a ring of two, none in a ring of one), so an assignment stays the same
/// size however many clusters there are (at 10,000 volunteers a ring has thousands of
/// members, and every node a copy of the whole list was O(n^2) on the coordinator).
struct RingRef
{
    uint64_t ringId = 0; ///< (firstLayer << 32) | lastLayer
    size_t firstLayer = 0;
    size_t lastLayer = 0;
    size_t rank = 0; ///< this node's position, 0 .. size-1
    size_t size = 1;
    PeerRef previous; ///< empty in a ring of one
    PeerRef next;     ///< empty in a ring of one
    bool alone() const { return size < 2; }
    bool operator==(const RingRef &) const = default;
};

/// The seat of member `rank` of a ring of `size` members in ring order, `member(k)`
/// giving the k-th (asked only for the two neighbours).
template <typename Member>
RingRef ringSeat(uint64_t ringId, size_t firstLayer, size_t lastLayer, size_t size, size_t rank, Member &&member)
{
    RingRef r{ringId, firstLayer, lastLayer, rank, size < 1 ? 1 : size, {}, {}};
    if (size >= 2 && rank < size) {
        r.previous = member((rank + size - 1) % size);
        r.next = member((rank + 1) % size);
    }
    return r;
}

enum class AssignmentState {
    Waiting,  ///< registered, in no working cluster yet: stay connected, train nothing
    Training, ///< run the stage below
    Stopped,  ///< the run is over or this node was let go: stop training
};

/// "waiting", "training", "stopped".
std::string_view assignmentStateName(AssignmentState state);

/// The reason a newcomer's assignment gives until its reachability check has a verdict
/// (it is placed with the verdict).
inline constexpr std::string_view kCheckingReachability = "waiting: checking whether peers can reach this node";

/// One node's place in the swarm. A node trains layers [firstLayer, lastLayer) as
/// stage `stage` of `stages` in cluster `cluster`'s pipeline, receives activations from
/// `previous` (none for the first stage) and sends them to `next` (none for the last),
/// averages its parameters over `rings` every averaging interval, and reads data shard
/// `shard`. When `weightsFrom` is set the node takes over layers it did not hold: it
/// fetches their current weights from that peer (WeightsRequest) before training.
///
/// Thread safety: a plain value.
struct Assignment
{
    uint64_t version = 0; ///< grows by one with every change; heartbeats echo it
    AssignmentState state = AssignmentState::Waiting;
    std::string reason; ///< for people: "waiting: the volunteers cannot hold the model yet"
    int cluster = -1;   ///< -1: in no cluster
    int clusterCount = 0;
    int stage = 0;
    int stages = 0;
    size_t firstLayer = 0;
    size_t lastLayer = 0;
    PeerRef previous;
    PeerRef next;
    std::vector<RingRef> rings;
    data::Shard shard;
    PeerRef weightsFrom;
    bool unreachable = false; ///< peers cannot dial this node: it dials them

    bool isTraining() const { return state == AssignmentState::Training; }
    bool isFirstStage() const { return stage == 0; }
    bool isLastStage() const { return stage + 1 == stages; }
    /// The same placement, whatever the version: what a node compares to know whether
    /// it must rebuild its stage.
    bool samePlacement(const Assignment &other) const;
    /// The same placement but perhaps other ring members (a cluster away, or back).
    bool sameExceptRings(const Assignment &other) const;
    /// What a node that runs `*this` may take over without a new stage: the same
    /// placement with other members in the same rings (ids and layer ranges), and perhaps
    /// without the `weightsFrom` it started from (its source left). A ring that is new
    /// or gone (another cluster was re-cut) needs a new stage.
    bool keepsStage(const Assignment &next) const;
    /// The same verdicts on who can be dialled (this node and every peer it names): a
    /// node that hears of a change re-decides which links it dials, and keeps its stage.
    bool sameReachability(const Assignment &other) const;
    /// Whether it links its node with `nodeId`: its previous or next stage, a member of
    /// one of its rings, or the node it takes its layers over from (those it may ask a
    /// relay to, and the only ones it takes values from).
    bool namesPeer(const std::string &nodeId) const;
    /// "training: cluster 2/5, stage 1/3, layers [2,5), 1 ring, shard 2/5 (v7)".
    std::string describe() const;
    bool operator==(const Assignment &) const;
};

/// The operator's run, as every node trains it.
///
/// Thread safety: a plain value.
struct RunConfig
{
    std::string runId;
    model::ModelSpec model;
    train::OptimizerConfig optimizer;
    int64_t microbatch = 64;
    int64_t accumulation = 1;       ///< microbatches per optimizer step
    int64_t averagingInterval = 10; ///< optimizer steps between ring averagings
    /// The outer step after each averaging round (DiLoCo's Nesterov): 1 and 0 are plain
    /// weight averaging (swarm::OuterSettings).
    double outerLearningRate = 1;
    double outerMomentum = 0;
    /// Rounds run on a thread of their own against a snapshot while training goes on,
    /// their change added when done; else on the stage thread, training paused.
    bool overlapAveraging = false;
    /// The most microbatches a root keeps in flight (its pipeline window's cap, so the
    /// staleness cap: about window - 1 optimizer steps); 0: the nodes' default
    /// (train::kDefaultMaxWindow). Below stages + 1 the window is stages + 1.
    int64_t maxWindow = 0;
    uint64_t seed = 1;
    int64_t totalSteps = 10000;
    std::string dataset = "fashion-mnist";
    /// The content hash (manifest SHA-256) of the dataset the coordinator serves to nodes
    /// without a copy of their own; empty: it serves none, every root needs its own copy.
    std::string datasetSha256;
    bool operator==(const RunConfig &) const = default;
};

/// The largest RunConfig::maxWindow: staleness ruins a run long before (bench_wan: 8 in
/// flight cost the MLP 15 points), and every microbatch in flight holds its activations
/// and stashed weights, which the plan's memory does not count beyond stages + 1.
constexpr int64_t kMaxWindowLimit = 16;

/// Throws rookery::Error naming the first bad field.
void validate(const RunConfig &run);

/// What a node learns when it registers.
struct Registration
{
    std::string nodeId;           ///< ours, as the coordinator saw it
    std::string certificatePem;   ///< our certificate, signed by the swarm CA: present it to peers
    std::string caCertificatePem; ///< the swarm CA: trust it (and nothing else) for peers
    RunConfig run;
    Assignment assignment;
    std::chrono::milliseconds heartbeatInterval{1000};
};

/// What a node is doing, as it reports it in heartbeats.
enum class NodeActivity { Unknown, Waiting, Loading, Training, Paused, Failed };

std::string_view nodeActivityName(NodeActivity activity);

/// Why a paused node is away, as it reports it (its governor's first rule that holds).
enum class AwayReason { None, PausedByUser, Snoozed, OnBattery, OutsideSchedule, WaitingForIdle };

/// "", "paused by its user", "snoozed", "on battery", "outside its schedule", "waiting for idle".
std::string_view awayReasonName(AwayReason reason);

/// A node's measure of its link to one neighbour: its upload to it and the round trip.
struct LinkMeasure
{
    double uploadBytesPerSecond = 0; ///< 0: no figure yet
    int64_t roundTripUs = 0;
    bool operator==(const LinkMeasure &) const = default;
};

/// A node's latest figures, sent with every heartbeat.
struct NodeReport
{
    double samplesPerSecond = 0; ///< through this node's stage, recent average
    int64_t step = 0;            ///< optimizer steps done
    double loss = 0;             ///< the last stage's recent loss (0 elsewhere)
    NodeActivity activity = NodeActivity::Unknown;
    int64_t samplesTotal = 0;
    double busyFraction = 0;            ///< share of wall time spent computing, 0..1
    AwayReason away = AwayReason::None; ///< with Paused: why
    int64_t sleptSeconds = 0;           ///< its computer was suspended this long since the node started
    /// What its stage could take if never starved (samples per second of its own time):
    /// measured speed, for the straggler check. 0 until known.
    double ownSamplesPerSecond = 0;
    /// Values of other peers this node refused as poisoned, by peer id, since it started.
    std::map<std::string, int64_t> complaints;
    /// Its links to its neighbours as it measured them, by peer id.
    std::map<std::string, LinkMeasure> links;
    /// The compute its CPU caps offer now over what they offered when it registered
    /// (its volunteer changed them since); 0: unknown, as 1.
    double computeOfferScale = 0;
    bool operator==(const NodeReport &) const = default;
};

} // namespace rookery::coord
