// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/sim/event_queue.h"

#include "engine/common/error.h"

namespace rookery::sim {

void EventQueue::push(double time, int kind, int64_t subject, uint64_t token)
{
    if (time < m_now)
        throw Error("sim: an event was scheduled in the past");
    m_heap.push({time, kind, subject, token, m_sequence++});
}

Event EventQueue::pop()
{
    Event e = m_heap.top();
    m_heap.pop();
    m_now = e.time;
    return e;
}

} // namespace rookery::sim
