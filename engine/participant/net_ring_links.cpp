// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/net_ring_links.h"

#include "engine/participant/testing_misbehaviour.h"

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/participant/peer_mesh.h"

namespace rookery::participant {
namespace {

// More than a few rounds' worth of chunks waiting means the previous member is far
// ahead, confused or flooding; the oldest are dropped (the all-reduce skips stale rounds
// anyway). Bounded in count and in bytes: one round of a 10M-parameter model's chunks is
// 40 MB.
constexpr size_t kMaxQueued = 256;
constexpr size_t kMaxQueuedBytes = size_t(128) << 20;
// Chunks from a member that is not the previous one (yet): a member that started a round
// before this one took the change sends one chunk a round until it hears back (more in a
// ring where the others go on without this member), so a few are plenty.
constexpr size_t kMaxEarly = 16;
constexpr size_t kMaxEarlyBytes = size_t(64) << 20;

size_t valueBytes(const swarm::RingChunk &c) { return c.values.size() * sizeof(float); }

} // namespace

NetRingLinks::NetRingLinks(PeerMesh &mesh, uint64_t ringId, std::string next, std::string previous)
    : m_mesh(mesh)
    , m_ringId(ringId)
    , m_next(std::move(next))
    , m_previous(std::move(previous))
{ }

void NetRingLinks::deliver(const std::string &peer, net::RingChunk &&chunk)
{
    const auto &t = chunk.tensor;
    if (peer.empty() || chunk.ringId != m_ringId || t.dtype != DType::Float32 || t.bytes % sizeof(float) != 0)
        return;
    swarm::RingChunk c{chunk.round, int(chunk.step), int(chunk.chunkIndex), std::vector<float>(t.bytes / sizeof(float)),
                       chunk.base};
    if (t.bytes)
        std::memcpy(c.values.data(), t.data, t.bytes);
    std::unique_lock lock(m_mutex);
    if (peer != m_previous) { // not our previous member: not yet, or not any more
        m_earlyBytes += valueBytes(c);
        m_early.emplace_back(peer, std::move(c));
        while (m_early.size() > 1 && (m_early.size() > kMaxEarly || m_earlyBytes > kMaxEarlyBytes)) {
            m_earlyBytes -= valueBytes(m_early.front().second);
            m_early.pop_front();
        }
        return;
    }
    if (m_finished) {
        if (c.step == swarm::kRoundEndedStep || m_lastEnded == c.round || m_next.empty())
            return;
        m_lastEnded = c.round;
        const std::string next = m_next;
        lock.unlock();
        sendTrainedToTheEnd(next, c.round);
        return;
    }
    queue(std::move(c));
    m_arrived.notify_all();
}

void NetRingLinks::queue(swarm::RingChunk &&chunk)
{
    m_queuedBytes += valueBytes(chunk);
    m_queue.push_back(std::move(chunk));
    while (m_queue.size() > 1 && (m_queue.size() > kMaxQueued || m_queuedBytes > kMaxQueuedBytes)) {
        m_queuedBytes -= valueBytes(m_queue.front());
        m_queue.pop_front();
    }
}

void NetRingLinks::finish()
{
    // What came since the last round was for a round after it: answered like what comes
    // from now on (dropped, it left its sender waiting out the timeout).
    std::vector<uint64_t> rounds;
    std::string next;
    {
        std::lock_guard lock(m_mutex);
        m_finished = true;
        for (const auto &c : m_queue)
            if (c.step != swarm::kRoundEndedStep && m_lastEnded != c.round) {
                m_lastEnded = c.round;
                rounds.push_back(c.round);
            }
        m_queue.clear();
        m_queuedBytes = 0;
        next = m_next;
    }
    if (!next.empty())
        for (const uint64_t round : rounds)
            sendTrainedToTheEnd(next, round);
}

void NetRingLinks::sendTrainedToTheEnd(const std::string &next, uint64_t round)
{
    // Once: a notice that cannot go now is not worth waiting for (deliver() sends it from
    // the network thread).
    (void)m_mesh.send(next, net::RingChunk{m_ringId, round, uint32_t(swarm::kRoundEndedStep),
                                           uint32_t(swarm::kTrainedToTheEnd),
                                           tensorBufferFromBytes(DType::Float32, {0}, {}), 0, ValuePrecision::Float32});
}

void NetRingLinks::cancel()
{
    std::lock_guard lock(m_mutex);
    m_cancelled = true;
    m_arrived.notify_all();
}

void NetRingLinks::reset()
{
    std::lock_guard lock(m_mutex);
    m_cancelled = false;
}

void NetRingLinks::setNeighbours(std::string next, std::string previous)
{
    std::lock_guard lock(m_mutex);
    m_next = std::move(next);
    if (previous == m_previous)
        return; // what it queued is still from our previous member
    m_previous = std::move(previous);
    m_queue.clear();
    m_queuedBytes = 0;
    // What the new previous member sent before this one knew it, in the order it came.
    std::deque<std::pair<std::string, swarm::RingChunk>> others;
    for (auto &[peer, chunk] : m_early) {
        if (peer == m_previous)
            queue(std::move(chunk));
        else
            others.emplace_back(std::move(peer), std::move(chunk));
    }
    m_early = std::move(others);
    m_earlyBytes = 0;
    for (const auto &e : m_early)
        m_earlyBytes += valueBytes(e.second);
    if (!m_queue.empty())
        m_arrived.notify_all();
}

void NetRingLinks::sendNext(swarm::RingChunk chunk)
{
    if (testingMisbehaviour().ringPoison)
        for (auto &x : chunk.values)
            x *= -1e6f;
    std::string next;
    {
        std::lock_guard lock(m_mutex);
        next = m_next;
    }
    if (next.empty())
        return;
    std::vector<uint8_t> bytes(chunk.values.size() * sizeof(float));
    if (!bytes.empty())
        std::memcpy(bytes.data(), chunk.values.data(), bytes.size());
    const int64_t count = int64_t(chunk.values.size());
    const uint64_t valueBytes = precisionBytes(chunk.values.size(), chunk.precision); // as they travel
    net::RingChunk m{m_ringId,
                     chunk.round,
                     uint32_t(chunk.step),
                     uint32_t(chunk.chunk),
                     tensorBufferFromBytes(DType::Float32, {count}, std::move(bytes)),
                     chunk.base,
                     chunk.precision};
    // A full queue drains quickly, and a link to a member that has only just been
    // placed comes up within moments; a link still down after that makes the receiving
    // side time out, which abandons the round on every member.
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const auto r = m_mesh.send(next, m);
        if (r == net::SendResult::Queued)
            m_bytesSent += valueBytes;
        if (r == net::SendResult::Queued || r == net::SendResult::TooLarge || chunk.step == swarm::kRoundEndedStep)
            return; // a notice goes once: a member that missed it waits out its timeout, as before
        if (r == net::SendResult::NotOpen && attempt >= 500)
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

std::optional<swarm::RingChunk> NetRingLinks::receivePrevious(std::chrono::steady_clock::time_point deadline)
{
    std::unique_lock lock(m_mutex);
    if (!m_arrived.wait_until(lock, deadline, [&] { return !m_queue.empty() || m_cancelled; }) || m_cancelled)
        return std::nullopt;
    swarm::RingChunk c = std::move(m_queue.front());
    m_queue.pop_front();
    m_queuedBytes -= valueBytes(c);
    return c;
}

} // namespace rookery::participant
