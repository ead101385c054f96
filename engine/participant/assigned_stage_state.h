// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/participant: AssignedStage's state, shared by assigned_stage.cpp
// (building the stage, its thread, progress and the public calls),
// assigned_stage_restore.cpp (its checkpoint, and the layers it keeps or takes over) and
// assigned_stage_rings.cpp (averaging rounds, and ring members that change).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/common/log.h"
#include "engine/participant/assigned_stage.h"
#include "engine/participant/net_stage_transport.h"
#include "engine/participant/stage_rings.h"
#include "engine/participant/stage_router.h"
#include "engine/participant/weights_relay.h"
#include "engine/store/checkpoint_writer.h"
#include "engine/train/stage_runtime.h"

namespace rookery::participant {

struct AssignedStage::Impl
{
    using Clock = std::chrono::steady_clock;

    Impl(PeerMesh &m, AssignedStageConfig c, Callbacks cb)
        : mesh(m)
        , config(std::move(c))
        , callbacks(std::move(cb))
    { }

    PeerMesh &mesh;
    AssignedStageConfig config;
    Callbacks callbacks;
    // Declared in the order they depend on each other: the router refers to the links
    // and the relay, the runtime to the transport.
    std::unique_ptr<NetStageTransport> transport;
    std::unique_ptr<WeightsRelay> relay;
    std::vector<StageRing> rings;
    std::unique_ptr<StageRouter> router;
    std::unique_ptr<train::StageRuntime> runtime;
    std::unique_ptr<store::CheckpointWriter> writer;
    std::string checkpointRun;

    std::thread stageThread;
    std::atomic<bool> running{false};

    // The rings average on a thread of their own, against a snapshot of the weights,
    // while the stage trains on; what a round changed is added once it is done.
    struct RingChange
    {
        std::vector<NamedTensor> before, after; // the ring's layers in the snapshot, and averaged
    };
    std::thread averagingThread;
    std::atomic<bool> averagingDone{false};
    std::vector<RingChange> averagingChanges; // the averaging thread's until averagingDone
    int64_t averagingVersion = 0;             // the steps of the round in flight's snapshot

    // New ring members from the control thread (updateRings), taken by the stage thread
    // between rounds (takeRingChanges). Guards them and each ring's `ref`.
    std::mutex ringsMutex;
    std::optional<std::vector<coord::RingRef>> pendingRings;
    std::set<uint64_t> cancelledRings; // their links were cancelled for a change: reset when taken
    bool closing = false;              // the destructor cancelled everything: nothing is reset

    // This stage's optimizer steps, as the stage thread last saw them: the network thread
    // judges a "finished" from the previous stage by it (believableFinish).
    std::atomic<int64_t> stepsDone{0};

    mutable std::mutex mutex; // guards the fields below
    Phase phase = Phase::Waiting;
    int failures = 0; // runs that ended in failure
    std::string lastStop;
    StageProgress progress;

    Clock::time_point lastRateTime = Clock::now();
    int64_t lastRateStep = 0;
    double lastOwnSeconds = 0;
    Clock::time_point lastReport = Clock::now();
    Clock::time_point lastCheckpoint{}; // the stage thread's last periodic checkpoint

    const coord::Assignment &a() const { return config.assignment; }
    bool root() const { return a().stage == 0; }
    int64_t finalMarker() const { return config.run.totalSteps + 1; }
    std::string believableFinish(int64_t rootStep) const;

    void say(const std::string &text)
    {
        log::info("swarm", text);
        if (callbacks.message)
            callbacks.message(text);
    }

    void buildLinks();
    void buildRuntime();
    void restore();
    bool ready = false; // restore() done: the stage may run and checkpoint
    bool restoreCheckpoint(const std::string &what);
    std::optional<std::pair<size_t, size_t>> keepOwnLayers();
    void keepOwnStep(const store::CheckpointInfo &from);
    void onUpdate(int64_t version);
    void averageRings(int64_t round); // now, on this thread (the last round)
    std::vector<RingChange> averageRingsOf(std::vector<NamedTensor> snapshot, int64_t round);
    void startAveraging(int64_t round);
    void collectAveraging(bool wait); // adds a finished round's change; `wait`: for one in flight
    void applyChanges(const std::vector<RingChange> &changes);
    void noteConsensus(std::vector<RingChange> changes, int64_t version);
    void takeRingChanges();
    void publishSnapshot(int64_t version)
    {
        relay->withdraw(); // the old copy goes before the new one is made: one copy at a time
        relay->publish(runtime->parameters(), uint64_t(version));
    }
    void stageMain();
    void settle(const train::StageRunResult &result);
    void finish();
    void evaluated(const train::EvaluationResult &result);
    void noteProgress(int64_t version, bool force);
};

} // namespace rookery::participant
