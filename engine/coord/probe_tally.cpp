// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/probe_tally.h"

namespace rookery::coord {

ProbeTally::Outcome ProbeTally::add(const void *link, const net::BandwidthProbe &probe)
{
    Tally &t = m_links[link];
    const uint64_t bytes = probe.payload.bytes;
    if (bytes > kMaxBytesPerLink - t.totalBytes) {
        m_links.erase(link);
        return {std::nullopt,
                "bandwidth probes of more than " + std::to_string(kMaxBytesPerLink >> 10) + " KiB on one connection"};
    }
    if (probe.probeId != t.probeId) {
        t.probeId = probe.probeId;
        t.probeBytes = 0;
    }
    t.totalBytes += bytes;
    t.probeBytes += bytes;
    Outcome out;
    if (probe.answer)
        out.reply = net::BandwidthProbeReply{t.probeId, t.probeBytes};
    return out;
}

void ProbeTally::forget(const void *link) { m_links.erase(link); }

} // namespace rookery::coord
