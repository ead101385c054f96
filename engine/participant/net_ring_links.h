// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "engine/net/wire_message.h"
#include "engine/swarm/ring_allreduce.h"

namespace rookery::participant {

class PeerMesh;

/// One ring's links over the swarm's TLS WebSocket links: chunks go to the next member
/// as RingChunk messages tagged with the ring's id; chunks from the previous member are
/// queued until the all-reduce asks for them.
///
/// Chunks from a member that is not (yet) the previous one are kept aside, a few rounds'
/// worth at most: after a re-plan the coordinator's news reaches the members at different
/// times, so a member may start a round with this one before this one has taken the
/// change that makes it its previous member. setNeighbours() then queues what it sent.
/// Dropping those chunks left both members waiting out the round's timeout (20 s).
///
/// Thread safety: the averaging thread calls sendNext() and receivePrevious(); the
/// network thread calls deliver(); cancel() from anywhere; reset() and setNeighbours()
/// while no round is under way.
class NetRingLinks final : public swarm::RingLinks
{
public:
    NetRingLinks(PeerMesh &mesh, uint64_t ringId, std::string next, std::string previous);

    void deliver(const std::string &peer, net::RingChunk &&chunk);
    /// This member takes part in no more rounds (its stage trained to the end): a chunk
    /// from the previous member, queued since its last round or coming later, is answered,
    /// once a round, with a notice to the next member that ends that round
    /// (swarm::roundEndedNotice, kTrainedToTheEnd). A member behind this one (it resumed
    /// from an older checkpoint) would otherwise wait out its timeout in its last round.
    void finish();
    /// Wakes a waiting receivePrevious() with nothing, now and until reset().
    void cancel();
    void reset();
    /// Other ring members on either side (the ring lost or regained a cluster). A new
    /// previous member: the chunks queued from the old one are dropped, and those the new
    /// one sent early are queued. The same previous member: its queued chunks stay.
    /// Empty: a ring of one.
    void setNeighbours(std::string next, std::string previous);

    void sendNext(swarm::RingChunk chunk) override;
    std::optional<swarm::RingChunk> receivePrevious(std::chrono::steady_clock::time_point deadline) override;

    /// The chunks' values queued for the next member so far, in bytes (framing and TLS
    /// not counted).
    uint64_t bytesSent() const { return m_bytesSent.load(); }

private:
    void queue(swarm::RingChunk &&chunk); // with m_mutex held; drops the oldest past the bounds
    void sendTrainedToTheEnd(const std::string &next, uint64_t round); // without m_mutex held

    PeerMesh &m_mesh;
    const uint64_t m_ringId;
    std::mutex m_mutex; // guards the fields below
    std::string m_next;
    std::string m_previous;
    std::condition_variable m_arrived;
    std::deque<swarm::RingChunk> m_queue;
    size_t m_queuedBytes = 0; ///< the values in m_queue
    /// Chunks from members other than m_previous, oldest first, with their senders.
    std::deque<std::pair<std::string, swarm::RingChunk>> m_early;
    size_t m_earlyBytes = 0; ///< the values in m_early
    bool m_cancelled = false;
    bool m_finished = false;
    std::optional<uint64_t> m_lastEnded; ///< with m_finished: the last round a notice ended
    std::atomic<uint64_t> m_bytesSent{0};
};

} // namespace rookery::participant
