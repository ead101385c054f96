// SPDX-License-Identifier: GPL-3.0-or-later
// The PeerMesh's link measures: each link that opens has its upload timed with a burst
// of padded pings (net::UploadProbe), which the peer's end answers by itself. The node
// reports the figures with its heartbeats; the coordinator's planner uses them for the
// links they describe (docs/architecture.md, "Measured links").
#include "engine/participant/peer_mesh_state.h"

#include <algorithm>

namespace rookery::participant {

namespace {

// Probe pings carry nonces from here up, 256 per probe; nothing else on a peer link
// sends wire pings.
constexpr uint64_t kProbeNonceBase = 0x4c696e6b00000000ull; // "Link"

std::string figureLine(const std::string &peer, const net::UploadProbe &probe)
{
    return "link to " + peer.substr(0, 12) + ": upload " + probe.describe();
}

} // namespace

void PeerMesh::State::keepFigure(const std::string &peer, const net::UploadProbe &probe)
{
    if (probe.bytesPerSecond() > 0)
        figures[peer] = {peer, probe.bytesPerSecond(), uint64_t(std::max<int64_t>(0, probe.roundTrip().count()))};
}

void PeerMesh::State::startProbe(const std::string &peer, const std::shared_ptr<net::Link> &link)
{
    std::lock_guard lock(probeMutex);
    const uint64_t base = kProbeNonceBase + (++probesStarted << 8);
    std::weak_ptr<net::Link> weak = link;
    LinkProbe p;
    p.probe = std::make_unique<net::UploadProbe>(
        [weak](const net::Ping &ping) {
            const auto l = weak.lock();
            return l && l->send(ping) == net::SendResult::Queued;
        },
        base);
    p.link = link;
    p.deadline = std::chrono::steady_clock::now() + config.linkProbeTimeout;
    p.probe->start(std::chrono::steady_clock::now());
    if (p.probe->done()) { // could not even send its first ping: no figure this time
        probes.erase(peer);
        return;
    }
    probes[peer] = std::move(p);
}

bool PeerMesh::State::probePong(const std::string &peer, const std::shared_ptr<net::Link> &link, uint64_t nonce)
{
    std::string line;
    {
        std::lock_guard lock(probeMutex);
        const auto it = probes.find(peer);
        if (it == probes.end() || it->second.link != link ||
            !it->second.probe->pong(nonce, std::chrono::steady_clock::now()))
            return false;
        if (!it->second.probe->done())
            return true;
        keepFigure(peer, *it->second.probe);
        line = figureLine(peer, *it->second.probe);
        probes.erase(it);
    }
    log::info("mesh", line);
    return true;
}

void PeerMesh::State::expireProbes(std::chrono::steady_clock::time_point now)
{
    std::vector<std::string> lines;
    {
        std::lock_guard lock(probeMutex);
        for (auto it = probes.begin(); it != probes.end();) {
            if (now < it->second.deadline) {
                ++it;
                continue;
            }
            auto &probe = *it->second.probe;
            probe.finishEarly(); // a slow link still gets a figure from part of its burst
            keepFigure(it->first, probe);
            lines.push_back(figureLine(it->first, probe));
            it = probes.erase(it);
        }
    }
    for (const auto &line : lines)
        log::info("mesh", line);
}

void PeerMesh::State::dropProbe(const std::shared_ptr<net::Link> &link)
{
    std::lock_guard lock(probeMutex);
    for (auto it = probes.begin(); it != probes.end();)
        it = it->second.link == link ? probes.erase(it) : std::next(it);
}

std::vector<net::LinkFigure> PeerMesh::linkFigures() const
{
    std::set<std::string> wanted;
    {
        std::lock_guard lock(m->mutex);
        wanted = m->wanted;
    }
    std::vector<net::LinkFigure> out;
    std::lock_guard lock(m->probeMutex);
    for (const auto &[peer, figure] : m->figures)
        if (wanted.count(peer))
            out.push_back(figure);
    return out;
}

} // namespace rookery::participant
