// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace rookery::participant {

/// Values this node refused as poisoned, counted by the peer that sent them, for the
/// node's whole life (its stages come and go): what its heartbeats report, so that the
/// coordinator can quarantine the sender.
///
/// Thread safety: all methods may be called from any thread; `onRefused` is called on
/// the refusing thread, without the lock held.
class PeerComplaints
{
public:
    /// `onRefused`: after each refusal (the node's loop wakes, to report it at once).
    explicit PeerComplaints(std::function<void()> onRefused = {})
        : m_onRefused(std::move(onRefused))
    { }

    void refused(const std::string &peerId)
    {
        {
            std::lock_guard lock(m_mutex);
            ++m_counts[peerId];
        }
        if (m_onRefused)
            m_onRefused();
    }
    std::map<std::string, int64_t> snapshot() const
    {
        std::lock_guard lock(m_mutex);
        return m_counts;
    }

private:
    const std::function<void()> m_onRefused;
    mutable std::mutex m_mutex;
    std::map<std::string, int64_t> m_counts;
};

} // namespace rookery::participant
