// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/net_stage_transport.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/common/log.h"
#include "engine/participant/peer_complaints.h"
#include "engine/participant/peer_mesh.h"
#include "engine/participant/testing_misbehaviour.h"

namespace rookery::participant {
namespace {

// A float32 copy of `t` times `factor` (a misbehaving node's activations or gradients).
TensorBuffer scaled(const TensorBuffer &t, float factor)
{
    if (t.dtype != DType::Float32)
        return t;
    std::vector<uint8_t> bytes(t.data, t.data + t.bytes);
    for (size_t i = 0; i + sizeof(float) <= bytes.size(); i += sizeof(float)) {
        float x;
        std::memcpy(&x, bytes.data() + i, sizeof x);
        x *= factor;
        std::memcpy(bytes.data() + i, &x, sizeof x);
    }
    return tensorBufferFromBytes(DType::Float32, t.shape, std::move(bytes));
}

} // namespace

namespace {

constexpr uint64_t kMicrobatchMask = (uint64_t(1) << NetStageTransport::kGenerationShift) - 1;

std::string stopText(const train::StopMessage &s)
{
    switch (s.kind) {
    case train::StopKind::Finished:
        return "finished";
    case train::StopKind::Cancelled:
        return "cancelled: " + s.reason;
    case train::StopKind::Failed:
        return "failed: " + s.reason;
    }
    return "failed: " + s.reason;
}

train::StopMessage stopFromText(int stage, const std::string &text)
{
    auto after = [&](size_t n) { return text.size() > n ? text.substr(n) : std::string(); };
    if (text.rfind("finished", 0) == 0)
        return {train::StopKind::Finished, stage, {}};
    if (text.rfind("cancelled: ", 0) == 0)
        return {train::StopKind::Cancelled, stage, after(11)};
    if (text.rfind("failed: ", 0) == 0)
        return {train::StopKind::Failed, stage, after(8)};
    return {train::StopKind::Failed, stage, text};
}

} // namespace

NetStageTransport::NetStageTransport(PeerMesh &mesh, int stage, std::string previous, std::string next,
                                     std::shared_ptr<PeerComplaints> complaints)
    : m_mesh(mesh)
    , m_stage(stage)
    , m_previous(std::move(previous))
    , m_next(std::move(next))
    , m_complaints(std::move(complaints))
{
    m_upPrevious = m_previous.empty() || m_mesh.isUp(m_previous);
    m_upNext = m_next.empty() || m_mesh.isUp(m_next);
}

void NetStageTransport::beginRun()
{
    std::lock_guard lock(m_mutex);
    m_abort.reset();
    m_tookThisRun = false;
    m_lastHeard = std::chrono::steady_clock::now();
    clearBackwardLocked();
    if (m_previous.empty()) {
        ++m_generation; // the root opens a new generation; stale messages of the old one are dropped
        clearForwardLocked();
    }
    // Non-root stages keep forward messages that already arrived for a newer generation:
    // the root may have restarted before this stage did.
}

void NetStageTransport::refuseLocked(const std::string &peer, const char *what, const std::string &why,
                                     int64_t refusedSoFar)
{
    if (m_complaints)
        m_complaints->refused(peer);
    // The first few, then one in a hundred: a hostile neighbour sends one per microbatch.
    if (refusedSoFar <= 3 || refusedSoFar % 100 == 0)
        log::warning("pipeline", "stage " + std::to_string(m_stage) + ": refused the " + what + " of peer " +
                                     peer.substr(0, 12) + ": " + why + "; this run stops, nothing of them trained (" +
                                     std::to_string(refusedSoFar) + " refused so far)");
    // Training on a stand-in would still send the sender gradients that do not match
    // what it computed; stopping the run keeps both ends clean until it is re-planned.
    abortLocked({train::StopKind::Cancelled, m_stage,
                 std::string("refused poisoned ") + what + " from peer " + peer.substr(0, 12)});
    m_changed.notify_all();
}

bool NetStageTransport::neighboursUp() const
{
    // Ask the mesh rather than our flags: a link may have opened before we were told.
    return (m_previous.empty() || m_mesh.isUp(m_previous)) && (m_next.empty() || m_mesh.isUp(m_next));
}

void NetStageTransport::deliver(const std::string &peer, net::Message &&message)
{
    std::lock_guard lock(m_mutex);
    if (peer == m_next)
        m_lastHeard = std::chrono::steady_clock::now();
    if (auto *a = std::get_if<net::Activations>(&message)) {
        if (peer != m_previous)
            return;
        const uint64_t generation = a->microbatchId >> kGenerationShift;
        if (generation < m_generation)
            return; // a microbatch of an older generation
        if (generation > m_generation) {
            // The root restarted the pipeline: whatever we held belongs to the old generation.
            // A run that already worked on the old one ends here, without telling the
            // neighbours (the root has moved on; the next stage sees the new generation
            // as we pass it on): its stage holds forwards of the old generation, and the
            // gradients it owes them would go out tagged with the new one, for
            // microbatches the root never sent in it. The next run starts with these.
            if (m_tookThisRun && !m_abort) {
                m_abort = train::StopMessage{train::StopKind::Cancelled, m_stage,
                                             "the root restarted the pipeline; this stage follows"};
            }
            m_generation = generation;
            clearForwardLocked();
            clearBackwardLocked();
        }
        const size_t bytes = a->activations.bytes + a->labels.bytes;
        if (auto why = overflow(m_forward.size(), m_forwardBytes, bytes); !why.empty())
            return refuseLocked(peer, "activations", why, ++m_floods);
        if (auto why = m_activationGuard.check(a->activations))
            return refuseLocked(peer, "activations", *why, m_activationGuard.refused());
        m_forwardBytes += bytes;
        m_forward.push_back(train::ForwardMessage{int64_t(a->microbatchId & kMicrobatchMask), int64_t(a->weightVersion),
                                                  std::move(a->activations), std::move(a->labels), a->evaluation,
                                                  int64_t(a->testId & uint64_t(INT64_MAX)), a->testLast});
    } else if (auto *g = std::get_if<net::Gradients>(&message)) {
        if (peer != m_next || (g->microbatchId >> kGenerationShift) != m_generation)
            return;
        if (auto why = overflow(m_backward.size(), m_backwardBytes, g->gradients.bytes); !why.empty())
            return refuseLocked(peer, "gradients", why, ++m_floods);
        if (auto why = m_gradientGuard.check(g->gradients))
            return refuseLocked(peer, "gradients", *why, m_gradientGuard.refused());
        m_backwardBytes += g->gradients.bytes;
        std::optional<train::EvaluationTally> tally;
        if (g->tally)
            tally = train::EvaluationTally{int64_t(g->tally->samples), int64_t(g->tally->correct), g->tally->lossSum};
        m_backward.push_back(
            train::BackwardMessage{int64_t(g->microbatchId & kMicrobatchMask), std::move(g->gradients), tally});
    } else if (auto *e = std::get_if<net::StageError>(&message)) {
        if ((peer != m_previous && peer != m_next) || (e->microbatchId >> kGenerationShift) < m_generation)
            return;
        train::StopMessage stop = stopFromText(int(e->stage), e->reason);
        if (stop.kind == train::StopKind::Finished) {
            if (peer != m_previous) // only the root's end travels down; never up
                return refuseLocked(peer, "'finished'", "a 'finished' from the next stage", ++m_unbelievedFinishes);
            const int64_t rootStep = int64_t(e->microbatchId & kMicrobatchMask);
            if (const std::string why = m_finishCheck ? m_finishCheck(rootStep) : std::string(); !why.empty())
                return refuseLocked(peer, "'finished'", why, ++m_unbelievedFinishes);
            m_finishedAtStep = rootStep;
            m_forward.push_back(stop); // in band, after the forward messages
        } else if (!m_abort) {
            // The previous neighbour speaks for the stages before this one, the next for
            // those after it (its own, or one it passes on).
            if ((peer == m_previous) != (int64_t(e->stage) < m_stage)) {
                if (++m_ignoredStops <= 3 || m_ignoredStops % 100 == 0)
                    log::warning("pipeline", "stage " + std::to_string(m_stage) + ": ignored a stop of stage " +
                                                 std::to_string(e->stage) + " from peer " + peer.substr(0, 12) +
                                                 ": that stage is not on its side of this one (" +
                                                 std::to_string(m_ignoredStops) + " ignored so far)");
                return;
            }
            // Failures are counted per stage that failed, of at most kMaxFailingStages
            // stages (a pipeline has far fewer): a stranger's numbers cannot grow the count.
            const bool tracked = m_neighbourFailures.count(e->stage) || m_neighbourFailures.size() < kMaxFailingStages;
            if (stop.kind == train::StopKind::Failed &&
                (!tracked || ++m_neighbourFailures[e->stage] > kMaxNeighbourFailures)) {
                // Forged: acted on, these would stop the run without end. Counted against
                // the sender; the run goes on.
                if (m_complaints)
                    m_complaints->refused(peer);
                if (++m_unbelievedFailures <= 3 || m_unbelievedFailures % 100 == 0)
                    log::warning("pipeline", "stage " + std::to_string(m_stage) + ": refused the 'failed' of peer " +
                                                 peer.substr(0, 12) + ": stage " + std::to_string(e->stage) +
                                                 " already failed " + std::to_string(kMaxNeighbourFailures) +
                                                 " times, and a node gives up after that; the run goes on (" +
                                                 std::to_string(m_unbelievedFailures) + " refused so far)");
                return;
            }
            // A neighbour's failure is not this node's: it stops the run here like a
            // cancel, and counts towards giving up only on the node that failed.
            if (stop.kind == train::StopKind::Failed) {
                stop = {train::StopKind::Cancelled, stop.stage,
                        "stage " + std::to_string(e->stage) + " failed: " + stop.reason};
                // A sender that says it failed itself has stopped its run, or says so
                // falsely and trains on, waiting for what this run dropped. Tell it this
                // run stopped too, in its own generation: an honest sender has already
                // stopped (or begun a newer one) and drops it; a false one stops now and
                // restarts the pipeline with us.
                if (int64_t(e->stage) == (peer == m_previous ? m_stage - 1 : m_stage + 1))
                    (void)m_mesh.send(peer, net::StageError{uint32_t(m_stage), e->microbatchId & ~kMicrobatchMask,
                                                            "cancelled: stage " + std::to_string(m_stage) +
                                                                " stopped on stage " + std::to_string(e->stage) +
                                                                "'s failure"});
            }
            // Pass the abort on to the other neighbour, then stop here too.
            const std::string &other = peer == m_previous ? m_next : m_previous;
            if (!other.empty())
                (void)m_mesh.send(other, net::StageError{e->stage, e->microbatchId, e->reason});
            m_abort = std::move(stop);
        }
    } else {
        return;
    }
    m_changed.notify_all();
}

void NetStageTransport::linkChanged(const std::string &peer, bool up)
{
    std::lock_guard lock(m_mutex);
    if (peer == m_previous)
        m_upPrevious = up;
    else if (peer == m_next)
        m_upNext = up;
    else
        return;
    if (!up && !m_abort) {
        const char *which = peer == m_previous ? "previous" : "next";
        log::warning("pipeline", "stage " + std::to_string(m_stage) + ": the link to the " + which +
                                     " stage was lost; stopping this run");
        abortLocked({train::StopKind::Cancelled, m_stage, std::string("lost the link to the ") + which + " stage"});
    }
    m_changed.notify_all();
}

void NetStageTransport::writable(const std::string &) { m_changed.notify_all(); }

bool NetStageTransport::sendTo(const std::string &peer, const net::Message &message)
{
    for (;;) {
        {
            std::lock_guard lock(m_mutex);
            if (m_abort)
                return false;
        }
        switch (m_mesh.send(peer, message)) {
        case net::SendResult::Queued:
            return true;
        case net::SendResult::TooLarge:
            abort({train::StopKind::Failed, m_stage, "a message is larger than the link's limit"});
            return false;
        case net::SendResult::NotOpen:
        case net::SendResult::QueueFull: {
            // Wait for the queue to drain, the link to come back, or an abort.
            std::unique_lock lock(m_mutex);
            m_changed.wait_for(lock, std::chrono::milliseconds(50), [&] { return m_abort.has_value(); });
            break;
        }
        }
    }
}

bool NetStageTransport::sendForward(train::ForwardMessage message)
{
    uint64_t id;
    {
        std::lock_guard lock(m_mutex);
        id = wireId(message.microbatch);
    }
    if (testingMisbehaviour().activationScale)
        message.activations = scaled(message.activations, 1e6f);
    const bool sent = sendTo(m_next, net::Activations{id, uint64_t(message.weightVersion),
                                                      std::move(message.activations), std::move(message.labels),
                                                      message.evaluation, uint64_t(message.testId), message.testLast});
    if (sent && testingMisbehaviour().forgedFinished && ++m_forgedCount % 40 == 0)
        (void)m_mesh.send(m_next, net::StageError{uint32_t(m_stage), id, "finished"});
    if (sent && testingMisbehaviour().forgedFailed && ++m_forgedCount % 40 == 0)
        (void)m_mesh.send(m_next, net::StageError{uint32_t(m_stage), id, "failed: forged"});
    return sent;
}

bool NetStageTransport::sendBackward(train::BackwardMessage message)
{
    uint64_t id;
    {
        std::lock_guard lock(m_mutex);
        id = wireId(message.microbatch);
    }
    // A stage whose predecessors train nothing sends no gradient: on the wire, an empty
    // tensor (shape [0]) says so.
    if (message.gradient.empty())
        message.gradient = tensorBufferFromBytes(DType::Float32, {0}, {});
    else if (testingMisbehaviour().nanGradients)
        message.gradient = scaled(message.gradient, std::numeric_limits<float>::quiet_NaN());
    std::optional<net::TestTally> tally;
    if (message.tally)
        tally = net::TestTally{uint64_t(std::max<int64_t>(0, message.tally->samples)),
                               uint64_t(std::max<int64_t>(0, message.tally->correct)), message.tally->lossSum};
    if (tally && testingMisbehaviour().forgedTally) {
        ++tally->samples;
        tally->correct = tally->samples;
    }
    const bool sent = sendTo(m_previous, net::Gradients{id, 0, std::move(message.gradient), tally});
    if (sent && testingMisbehaviour().forgedFinished && ++m_forgedCount % 40 == 0)
        (void)m_mesh.send(m_previous, net::StageError{uint32_t(m_stage), id, "finished"});
    if (sent && testingMisbehaviour().forgedFailed && ++m_forgedCount % 40 == 0)
        (void)m_mesh.send(m_previous, net::StageError{uint32_t(m_stage), id, "failed: forged"});
    return sent;
}

bool NetStageTransport::sendFinished()
{
    uint64_t id;
    {
        std::lock_guard lock(m_mutex);
        const int64_t step = m_previous.empty() ? (m_rootStep ? m_rootStep() : 0) : m_finishedAtStep;
        id = wireId(std::clamp<int64_t>(step, 0, int64_t(kMicrobatchMask)));
    }
    return sendTo(m_next, net::StageError{uint32_t(m_stage), id, "finished"});
}

std::optional<train::StageMessage> NetStageTransport::takeLocked()
{
    if (m_abort)
        return train::StageMessage(*m_abort);
    m_tookThisRun = m_tookThisRun || !m_backward.empty() || !m_forward.empty();
    if (!m_backward.empty()) {
        m_backwardBytes -= m_backward.front().gradient.bytes;
        train::StageMessage m(std::move(m_backward.front()));
        m_backward.pop_front();
        return m;
    }
    if (!m_forward.empty()) {
        if (const auto *f = std::get_if<train::ForwardMessage>(&m_forward.front()))
            m_forwardBytes -= f->activations.bytes + f->labels.bytes;
        train::StageMessage m(std::move(m_forward.front()));
        m_forward.pop_front();
        return m;
    }
    return std::nullopt;
}

std::string NetStageTransport::overflow(size_t queued, size_t queuedBytes, size_t bytes)
{
    if (queued >= kMaxQueued)
        return "more than " + std::to_string(kMaxQueued) + " microbatches waiting (flooding)";
    if (queuedBytes + bytes > kMaxQueuedBytes)
        return "more than " + std::to_string(kMaxQueuedBytes >> 20) + " MiB waiting (flooding)";
    return {};
}

void NetStageTransport::clearForwardLocked()
{
    m_forward.clear();
    m_forwardBytes = 0;
}

void NetStageTransport::clearBackwardLocked()
{
    m_backward.clear();
    m_backwardBytes = 0;
}

train::StageMessage NetStageTransport::receive()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        if (auto m = takeLocked())
            return std::move(*m);
        // The root waits here for gradients. None for m_stallTimeout, with the link up:
        // microbatches were lost (a neighbour restarted its run without this one, or
        // lies), and a window waiting for them waits forever. Restart the pipeline.
        if (m_previous.empty() && !m_next.empty() && m_upNext) {
            if (m_changed.wait_until(lock, m_lastHeard + m_stallTimeout) == std::cv_status::timeout && !m_abort &&
                std::chrono::steady_clock::now() >= m_lastHeard + m_stallTimeout) {
                const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(m_stallTimeout).count();
                log::warning("pipeline", "stage " + std::to_string(m_stage) + ": nothing from the next stage for " +
                                             std::to_string(seconds) + " s; restarting the pipeline");
                abortLocked({train::StopKind::Cancelled, m_stage,
                             "nothing from the next stage for " + std::to_string(seconds) + " s"});
            }
        } else {
            m_changed.wait(lock);
        }
    }
}

std::optional<train::StageMessage> NetStageTransport::poll()
{
    std::lock_guard lock(m_mutex);
    return takeLocked();
}

void NetStageTransport::abortLocked(train::StopMessage reason)
{
    if (m_abort)
        return;
    const net::StageError e{uint32_t(std::max(reason.stage, 0)), wireId(0), stopText(reason)};
    for (const std::string *peer : {&m_previous, &m_next})
        if (!peer->empty())
            (void)m_mesh.send(*peer, e);
    m_abort = std::move(reason);
    m_changed.notify_all();
}

void NetStageTransport::abort(train::StopMessage reason)
{
    std::lock_guard lock(m_mutex);
    abortLocked(std::move(reason));
}

} // namespace rookery::participant
