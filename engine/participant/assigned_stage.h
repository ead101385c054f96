// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/common/value_precision.h"
#include "engine/coord/assignment.h"
#include "engine/data/image_dataset.h"
#include "engine/device/thread_config.h"
#include "engine/device/work_gate.h"
#include "engine/net/wire_message.h"
#include "engine/train/pipeline_window.h"
#include "engine/train/trainer.h"

namespace rookery::store {
class CheckpointStore;
}

namespace rookery::participant {

class PeerMesh;
class PeerComplaints;

/// What an assigned stage needs besides its assignment.
struct AssignedStageConfig
{
    coord::RunConfig run;
    coord::Assignment assignment;
    /// A root's data (null for the other stages, which need none).
    std::shared_ptr<const data::ImageDataset> train;
    std::shared_ptr<const data::ImageDataset> test;
    /// The slice of `train` the root reads; none: the assignment's data shard (a local
    /// copy holds the whole dataset, fetched data only this cluster's shards).
    std::optional<data::Shard> dataShard;
    device::WorkGate *gate = nullptr;
    device::ThreadConfig threads{1, 1};
    store::CheckpointStore *checkpoints = nullptr;
    int keepCheckpoints = 3;
    int64_t checkpointEvery = 50;               ///< optimizer steps
    std::chrono::seconds checkpointInterval{0}; ///< ... and at least this long apart (0: no floor)
    int64_t evaluateEvery = 100;                ///< optimizer steps; the root evaluates its pipeline's model
    std::chrono::milliseconds ringTimeout{20'000};
    /// How ring chunks this member sends travel where they are differences from the
    /// last round's weights (bf16: half the bytes; int8: about a quarter; int4: an eighth; stage_rings.h).
    ValuePrecision ringPrecision = ValuePrecision::Int8;
    /// The root's cap on microbatches in flight: its window grows to cover the measured
    /// round trip up to this; at least stages + 1. Staleness grows with it, and accuracy
    /// suffers beyond about 5 (bench_wan: the MLP at 81-83% after 1,500 steps with 4-5 in
    /// flight, 70% with 8). The run's own cap (coord::RunConfig::maxWindow, a job
    /// setting), when it sets one, takes its place.
    int maxWindow = train::kDefaultMaxWindow;
    /// Where refusals of a peer's values are counted for the coordinator (null: nowhere).
    std::shared_ptr<PeerComplaints> complaints;
};

/// Figures an assigned stage publishes as it trains.
struct StageProgress
{
    int64_t step = 0;
    int64_t totalSteps = 0;
    double samplesPerSecond = 0;
    double loss = 0;
    double testAccuracy = -1;
    int64_t samplesTotal = 0;
    double busyFraction = 0;
    /// What this stage could take if never starved: samples per second of its own time
    /// (StageRuntime::ownSeconds), recent average; 0 until known.
    double ownSamplesPerSecond = 0;
    double staleness = 0;     ///< mean over this run's backwards so far
    int window = 0;           ///< root: microbatches in flight allowed now; 0 elsewhere
    int64_t ringRounds = 0;   ///< averaging rounds completed
    int64_t ringSkipped = 0;  ///< rounds abandoned (a member away or silent)
    int64_t ringRejected = 0; ///< rounds in which the previous member sent values that cannot be honest
    uint64_t bytesSent = 0;   ///< on every peer link of this node so far (TLS records included)
    /// Of them, the values of this stage's ring chunks (its averaging; every member of a
    /// ring is in another cluster, so all of it crosses clusters). Counted per assignment.
    uint64_t ringBytesSent = 0;
};

/// One assignment of this node: its pipeline stage over the network, its rings, its
/// checkpoints. Built when an assignment arrives and torn down (after a checkpoint)
/// when the placement changes. Trains on a thread of its own; the node's control
/// thread calls poke() now and then to restart a run that stopped because a
/// neighbour went away, once the neighbour is back.
///
/// Its parts: a NetStageTransport to the pipeline neighbours, a NetRingLinks per ring
/// (averaged by swarm::RingAveraging), a WeightsRelay (weights for a node taking over
/// layers); a StageRouter sends each peer message to the right one. The root tests the
/// pipeline's model by sending test batches through it (StageConfig::test): every
/// "evaluateEvery" steps beside training, and once more after every stage's last
/// averaging round. (Named
/// "assigned stage", not "session": net::Session is a connection, and the transport
/// numbers its runs as generations.)
///
/// Thread safety: deliver(), linkChanged() and writable() on the network thread; the
/// rest on the control thread. Callbacks come from the stage thread.
class AssignedStage
{
public:
    struct Callbacks
    {
        std::function<void(const std::string &)> message;
        std::function<void(const StageProgress &)> progress;
    };
    /// Finishing: trained to the end, now averaging a last time and evaluating.
    enum class Phase { Waiting, Training, Finishing, Finished, Failed };

    /// Builds the stage, with the run's initial weights until restore(). Throws
    /// rookery::Error on bad settings.
    AssignedStage(PeerMesh &mesh, AssignedStageConfig config, Callbacks callbacks);
    /// Restores the stage: from this node's newest checkpoint of the same layers (then
    /// catches up with a ring peer's current weights), or else keeps the layers it held
    /// in its checkpoint of another range and fetches the rest from the peer named in
    /// the assignment's weightsFrom. Call it once the stage receives its messages (it
    /// is in the node's StageSlot): the fetch's reply comes through deliver(). Blocks
    /// up to 45 s; poke() starts no run before it.
    void restore();
    /// Stops the run (Cancelled), joins the stage thread and checkpoints.
    ~AssignedStage();
    AssignedStage(const AssignedStage &) = delete;
    AssignedStage &operator=(const AssignedStage &) = delete;

    /// A message from `peer`, routed to the part it is for (StageRouter).
    void deliver(const std::string &peer, net::Message &&message);
    /// The link to `peer` opened or closed.
    void linkChanged(const std::string &peer, bool up);
    /// The link to `peer` has room again for sends that waited.
    void writable(const std::string &peer);

    /// Starts a run if none is going and the neighbours are up.
    void poke();
    /// The same placement with other ring members (a cluster left the rings while it is
    /// away, or came back): taken between averaging rounds, without stopping the stage.
    /// Only rings the stage has (by id) change; new rings need a new stage.
    void updateRings(const std::vector<coord::RingRef> &rings);
    /// Where the stage stands. Finished is final; Failed lasts until poke() starts
    /// another run.
    Phase phase() const;
    /// Runs of this stage that ended in failure (poke() starts another after each).
    int failureCount() const;
    /// The error that failed the stage, or why the last run stopped.
    std::string lastStop() const;
    /// A copy of the figures as they stand.
    StageProgress progress() const;
    /// The assignment the stage was built for.
    const coord::Assignment &assignment() const;

    struct Impl;

private:
    std::unique_ptr<Impl> d;
};

/// The checkpoint run name for a layer range of a swarm run: "swarm:<run>:layers 0-2".
std::string swarmCheckpointRun(const std::string &runId, size_t firstLayer, size_t lastLayer);

} // namespace rookery::participant
