// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace rookery::sim {

/// One thing that happens at a simulated time. `kind` and `subject` mean what the
/// simulator that schedules them says; `token` lets a later event cancel an earlier one
/// (the handler compares it with the subject's current token and ignores stale ones).
struct Event
{
    double time = 0; ///< simulated seconds since the start
    int kind = 0;
    int64_t subject = 0;
    uint64_t token = 0;
    uint64_t sequence = 0; ///< insertion order: equal times run first in, first out
};

/// A priority queue of events in simulated time. Ties are broken by insertion order,
/// so a run is deterministic.
///
/// Thread safety: none; one owner.
class EventQueue
{
public:
    void push(double time, int kind, int64_t subject, uint64_t token = 0);
    bool empty() const { return m_heap.empty(); }
    size_t size() const { return m_heap.size(); }
    /// The earliest event; the queue must not be empty.
    Event pop();
    /// Time of the last popped event (0 before the first).
    double now() const { return m_now; }

private:
    struct Later
    {
        bool operator()(const Event &a, const Event &b) const
        {
            return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;
        }
    };
    std::priority_queue<Event, std::vector<Event>, Later> m_heap;
    uint64_t m_sequence = 0;
    double m_now = 0;
};

} // namespace rookery::sim
