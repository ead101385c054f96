// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace rookery::participant {

/// Values this node refused as poisoned, counted by the peer that sent them, for the
/// node's whole life (its stages come and go): what its heartbeats report, so that the
/// coordinator can quarantine the sender.
///
/// Thread safety: all methods may be called from any thread.
class PeerComplaints
{
public:
    void refused(const std::string &peerId)
    {
        std::lock_guard lock(m_mutex);
        ++m_counts[peerId];
    }
    std::map<std::string, int64_t> snapshot() const
    {
        std::lock_guard lock(m_mutex);
        return m_counts;
    }

private:
    mutable std::mutex m_mutex;
    std::map<std::string, int64_t> m_counts;
};

} // namespace rookery::participant
