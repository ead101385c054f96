// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "engine/net/wire_message.h"

namespace rookery::coord {

/// The coordinator's half of BandwidthProbe (docs/protocol.md): it counts each link's
/// probe bytes, answers a frame marked `answer` with the bytes its probe brought, and
/// refuses a link that sends more than kMaxBytesPerLink in all, so that probing cannot
/// be used to keep the coordinator busy.
///
/// Thread safety: none; the registry calls it under its mutex.
class ProbeTally
{
public:
    /// A node probes with 768 KiB (CoordinatorClientConfig::probeBytes); a link may send
    /// 1 MiB and 64 KiB.
    static constexpr uint64_t kMaxBytesPerLink = (uint64_t(1) << 20) + (uint64_t(64) << 10);

    struct Outcome
    {
        std::optional<net::BandwidthProbeReply> reply; ///< for a frame marked `answer`
        std::string refusal;                           ///< not empty: refuse the link, saying this
    };

    Outcome add(const void *link, const net::BandwidthProbe &probe);
    void forget(const void *link);
    size_t links() const { return m_links.size(); }

private:
    struct Tally
    {
        uint64_t probeId = 0;
        uint64_t probeBytes = 0; ///< of probeId
        uint64_t totalBytes = 0; ///< of every probe on the link
    };
    std::unordered_map<const void *, Tally> m_links;
};

} // namespace rookery::coord
