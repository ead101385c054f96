// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/stage_router.h"

#include "engine/participant/net_ring_links.h"
#include "engine/participant/net_stage_transport.h"
#include "engine/participant/weights_relay.h"

namespace rookery::participant {

StageRouter::StageRouter(NetStageTransport &transport, WeightsRelay &relay)
    : m_transport(transport)
    , m_relay(relay)
{ }

void StageRouter::addRing(uint64_t ringId, NetRingLinks &links) { m_rings.emplace_back(ringId, &links); }

void StageRouter::deliver(const std::string &peer, net::Message &&message)
{
    if (auto *chunk = std::get_if<net::RingChunk>(&message)) {
        for (auto &[ringId, links] : m_rings)
            if (ringId == chunk->ringId)
                links->deliver(peer, std::move(*chunk));
        return;
    }
    if (std::holds_alternative<net::WeightsRequest>(message) || std::holds_alternative<net::WeightsReply>(message)) {
        m_relay.deliver(peer, std::move(message));
        return;
    }
    m_transport.deliver(peer, std::move(message));
}

void StageRouter::linkChanged(const std::string &peer, bool up) { m_transport.linkChanged(peer, up); }

void StageRouter::writable(const std::string &peer) { m_transport.writable(peer); }

} // namespace rookery::participant
