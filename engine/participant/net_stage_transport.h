// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/net/wire_message.h"
#include "engine/participant/tensor_guard.h"
#include "engine/train/stage_transport.h"

namespace rookery::participant {

class PeerMesh;
class PeerComplaints;

/// A pipeline stage's links to its neighbours over the swarm's TLS WebSocket links:
/// forward activations go to the next stage as Activations, gradients back to the
/// previous one as Gradients, and the end of a run or an abort as a StageError whose
/// reason starts with "finished", "cancelled" or "failed".
///
/// Generations: every restart of the pipeline is a generation. The root starts each
/// one with a higher number; the others follow the numbers they receive. Messages carry
/// their generation in the top 24 bits of the microbatch id, and a stage drops what
/// belongs to an older generation, so a pipeline restarted after a peer was lost never
/// mixes old microbatches with new ones.
///
/// A lost link to a neighbour aborts the run in progress (Cancelled). A neighbour's stop
/// ("cancelled" or "failed") counts only when the stage it names lies on the sender's
/// side (the previous neighbour speaks for stages before this one, the next for those
/// after it), and a stage's failures only up to kMaxNeighbourFailures per assignment:
/// a node gives up after that many of its own, so more are forged. Those are refused,
/// without stopping the run, and counted against the sender. A stage that acts on its
/// neighbour's own "failed" answers it with a "cancelled", so a sender that said so and
/// trains on (waiting for microbatches this run dropped) stops and restarts with it.
///
/// The root restarts the pipeline (a new generation) when nothing came from the next
/// stage for the stall timeout while the link was up: its window waits on microbatches
/// that were lost, whoever lost them.
///
/// Thread safety: the stage thread sends and receives; deliver(), linkChanged() and
/// writable() are called on the network thread; abort() from anywhere.
class NetStageTransport final : public train::StageTransport
{
public:
    /// `previous`/`next` are neighbour node ids ("" for none: the root has no previous
    /// stage, the leaf no next).
    /// Values a neighbour sends are checked (TensorGuard); a refused tensor stops the run
    /// (nothing of it is trained on) and is counted against the sender in `complaints`
    /// (may be null).
    NetStageTransport(PeerMesh &mesh, int stage, std::string previous, std::string next,
                      std::shared_ptr<PeerComplaints> complaints = {});

    /// A "finished" carries the root's step (in its microbatch number); `check` says why
    /// that step cannot be the run's end ("" when it can). An unbelievable one is refused
    /// like a poisoned tensor. Called on the network thread; set before the first run.
    void setFinishCheck(std::function<std::string(int64_t rootStep)> check) { m_finishCheck = std::move(check); }
    /// At the root: its optimizer steps, which its "finished" carries. Set before the
    /// first run. (Other stages pass on the step they received.)
    void setRootStep(std::function<int64_t()> step) { m_rootStep = std::move(step); }

    /// How long the root waits for anything from the next stage, its link up, before it
    /// restarts the pipeline (kStallTimeout unless set; tests set less).
    void setStallTimeout(std::chrono::steady_clock::duration timeout)
    {
        std::lock_guard lock(m_mutex);
        m_stallTimeout = timeout;
    }

    /// Prepares the next run: drops what is queued, clears the abort, and (at the root)
    /// opens a new generation. Call before each StageRuntime::run().
    void beginRun();
    /// True while both neighbours' links are up.
    bool neighboursUp() const;

    // Called by the node's message dispatch on the network thread.
    void deliver(const std::string &peer, net::Message &&message);
    void linkChanged(const std::string &peer, bool up);
    void writable(const std::string &peer);

    bool sendForward(train::ForwardMessage message) override;
    bool sendBackward(train::BackwardMessage message) override;
    bool sendFinished() override;
    train::StageMessage receive() override;
    std::optional<train::StageMessage> poll() override;
    void abort(train::StopMessage reason) override;

    /// The bit where the generation starts in a wire microbatch id (below it: the
    /// microbatch number).
    static constexpr int kGenerationShift = 40;
    /// What may wait in each direction before the sender counts as flooding: an honest
    /// neighbour has at most its window in flight (a handful of microbatches), so more
    /// than this many, or this many bytes, is refused like a poisoned tensor.
    static constexpr size_t kMaxQueued = 64;
    static constexpr size_t kMaxQueuedBytes = size_t(256) << 20;
    /// The failures of one stage this stage acts on per assignment: a node gives up
    /// after its 4th (SwarmNode), so a 5th is not an honest node's.
    static constexpr int kMaxNeighbourFailures = 4;
    static constexpr size_t kMaxFailingStages = 64;
    /// A microbatch's round trip is well under a second on a home link; a minute of
    /// silence from the next stage means its gradients will not come.
    static constexpr std::chrono::seconds kStallTimeout{60};

private:
    bool sendTo(const std::string &peer, const net::Message &message);
    void abortLocked(train::StopMessage reason);
    /// A tensor from `peer` failed its guard: counted against it, logged (not every time),
    /// and the run stopped.
    void refuseLocked(const std::string &peer, const char *what, const std::string &why, int64_t refusedSoFar);
    std::optional<train::StageMessage> takeLocked();
    /// "" when one more message of `bytes` fits behind `queued` messages of `queuedBytes`;
    /// else why not.
    static std::string overflow(size_t queued, size_t queuedBytes, size_t bytes);
    void clearForwardLocked();
    void clearBackwardLocked();
    uint64_t wireId(int64_t microbatch) const { return (m_generation << kGenerationShift) | uint64_t(microbatch); }

    PeerMesh &m_mesh;
    const int m_stage;
    const std::string m_previous;
    const std::string m_next;

    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    uint64_t m_generation = 0;
    /// Non-root: this run has taken a message (from m_generation). A run belongs to one
    /// generation: its stage holds forwards of it, and tags what it sends with it.
    bool m_tookThisRun = false;
    std::deque<train::BackwardMessage> m_backward;
    std::deque<train::StageMessage> m_forward; // forward messages and Finished, in order
    size_t m_backwardBytes = 0;                // tensor bytes in m_backward
    size_t m_forwardBytes = 0;                 // tensor bytes in m_forward
    int64_t m_floods = 0;                      // messages refused for overflow()
    int64_t m_forgedCount = 0;                 // testing: forged-finished
    std::optional<train::StopMessage> m_abort;
    bool m_upPrevious = false;
    bool m_upNext = false;
    std::shared_ptr<PeerComplaints> m_complaints;
    TensorGuard m_activationGuard; ///< on what the previous stage sends
    TensorGuard m_gradientGuard;   ///< on what the next stage sends
    std::function<std::string(int64_t)> m_finishCheck;
    std::function<int64_t()> m_rootStep;
    int64_t m_finishedAtStep = 0; // the root's step in the "finished" this stage accepted
    int64_t m_unbelievedFinishes = 0;
    std::map<uint32_t, int> m_neighbourFailures; // by the stage that failed
    int64_t m_unbelievedFailures = 0;
    int64_t m_ignoredStops = 0;
    std::chrono::steady_clock::duration m_stallTimeout = kStallTimeout;
    std::chrono::steady_clock::time_point m_lastHeard = std::chrono::steady_clock::now(); // from the next stage
};

} // namespace rookery::participant
