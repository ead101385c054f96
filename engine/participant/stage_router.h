// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/net/wire_message.h"

namespace rookery::participant {

class NetRingLinks;
class NetStageTransport;
class WeightsRelay;

/// The one place that decides where the peer messages and link events of an assigned
/// stage go:
///
/// - RingChunk: to the links of the ring it names (a chunk for no ring of ours is dropped);
/// - WeightsRequest and WeightsReply: to the weights relay, which answers requests from
///   its published copy and hands replies to whoever waits on them (the root's pipeline
///   evaluation, or the catch-up when the stage is built);
/// - everything else (Activations, Gradients, StageError): to the stage transport, which
///   ignores what is not for it;
/// - link up and down, and "writable again": to the stage transport, which stops a run
///   when a neighbour's link is lost and resumes sends that waited for room.
///
/// Messages that arrive before a stage exists are the node's business (SwarmNode keeps
/// them and replays them into the next stage).
///
/// Thread safety: built on the control thread before any message arrives; after that,
/// deliver(), linkChanged() and writable() on the network thread. The router owns none
/// of its targets; they must outlive it.
class StageRouter
{
public:
    StageRouter(NetStageTransport &transport, WeightsRelay &relay);

    /// Routes the chunks of ring `ringId` to `links`. Call before the first message.
    void addRing(uint64_t ringId, NetRingLinks &links);

    void deliver(const std::string &peer, net::Message &&message);
    void linkChanged(const std::string &peer, bool up);
    void writable(const std::string &peer);

private:
    NetStageTransport &m_transport;
    WeightsRelay &m_relay;
    std::vector<std::pair<uint64_t, NetRingLinks *>> m_rings;
};

} // namespace rookery::participant
