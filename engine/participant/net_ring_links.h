// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

#include "engine/net/wire_message.h"
#include "engine/swarm/ring_allreduce.h"

namespace rookery::participant {

class PeerMesh;

/// One ring's links over the swarm's TLS WebSocket links: chunks go to the next member
/// as RingChunk messages tagged with the ring's id; chunks from the previous member are
/// queued until the all-reduce asks for them.
///
/// Thread safety: the averaging thread calls sendNext() and receivePrevious(); the
/// network thread calls deliver(); cancel() from anywhere; reset() and setNeighbours()
/// while no round is under way.
class NetRingLinks final : public swarm::RingLinks
{
public:
    NetRingLinks(PeerMesh &mesh, uint64_t ringId, std::string next, std::string previous);

    void deliver(const std::string &peer, net::RingChunk &&chunk);
    /// Wakes a waiting receivePrevious() with nothing, now and until reset().
    void cancel();
    void reset();
    /// Other ring members on either side (the ring lost or regained a cluster); chunks
    /// queued from the old previous member are dropped. Empty: a ring of one.
    void setNeighbours(std::string next, std::string previous);

    void sendNext(swarm::RingChunk chunk) override;
    std::optional<swarm::RingChunk> receivePrevious(std::chrono::steady_clock::time_point deadline) override;

    /// The chunks' values queued for the next member so far, in bytes (framing and TLS
    /// not counted).
    uint64_t bytesSent() const { return m_bytesSent.load(); }

private:
    PeerMesh &m_mesh;
    const uint64_t m_ringId;
    std::mutex m_mutex; // guards the fields below
    std::string m_next;
    std::string m_previous;
    std::condition_variable m_arrived;
    std::deque<swarm::RingChunk> m_queue;
    size_t m_queuedBytes = 0; ///< the values in m_queue
    bool m_cancelled = false;
    std::atomic<uint64_t> m_bytesSent{0};
};

} // namespace rookery::participant
