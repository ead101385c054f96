// SPDX-License-Identifier: GPL-3.0-or-later
// NodeRegistry's failure detection: heartbeat timeouts, and grace periods that expire.
#include "engine/coord/node_registry.h"

#include "engine/common/log.h"
#include "engine/coord/heartbeat_pace.h"
#include "engine/coord/node_registry_record.h"

namespace rookery::coord {

using namespace registry_detail;

void NodeRegistry::lose(Record &rec, Clock::time_point now, const std::string &why)
{
    const bool wasAway = rec.away();
    rec.presence = Presence::Lost;
    rec.lostWithCoordinator = false;
    rec.graceUntil = now + m_config.rejoinGrace;
    rec.link.reset();
    if (rec.away() != wasAway && m_hooks.awayChanged)
        m_hooks.awayChanged();
    if (rec.inPlanner && !rec.assignment.isTraining()) { // it holds nothing: no reason to wait for it
        m_hooks.leave(rec.nodeId);
        rec.inPlanner = false;
    }
    log::info(kArea, "lost node " + shortId(rec.nodeId) + " '" + rec.name + "': " + why + "; it keeps its place for " +
                         millis(m_config.rejoinGrace));
    m_hooks.changed();
    persist(rec);
}

void NodeRegistry::placeAfterVerdict(Record &rec)
{
    rec.awaitingVerdict = false;
    if (rec.presence != Presence::Online || rec.inPlanner)
        return; // it went meanwhile; placed when it registers again
    rec.inPlanner = true;
    m_hooks.join(rec.nodeId, rec.capacity);
}

void NodeRegistry::tick(Clock::time_point now)
{
    Outbox out;
    {
        std::lock_guard lock(m_mutex);
        m_limits.prune(now);
        for (auto it = m_unregistered.begin(); it != m_unregistered.end();) {
            if (now - it->second.second <= m_config.registerTimeout) {
                ++it;
                continue;
            }
            ++m_counters.refusals;
            const std::string why = "no registration within " + millis(m_config.registerTimeout);
            auto link = it->second.first.lock();
            if (link)
                log::warning(kArea, "closing " + link->describe() + ": " + why);
            out.close(std::move(link), why);
            it = m_unregistered.erase(it);
        }
        size_t online = 0;
        for (auto &[id, r] : m_nodes) {
            Record &rec = *r;
            if (rec.presence == Presence::Online &&
                now - rec.lastSeen > silenceLimit(m_config.heartbeatTimeout, rec.allowedInterval)) {
                auto link = rec.link.lock();
                if (link)
                    m_linkNode.erase(link.get());
                const std::string why =
                    "no heartbeat for " + millis(silenceLimit(m_config.heartbeatTimeout, rec.allowedInterval));
                out.close(link, why);
                lose(rec, now, why);
            } else if (rec.paused() && rec.pausedSince && now - *rec.pausedSince >= m_config.rejoinGrace &&
                       rec.inPlanner && rec.assignment.isTraining()) {
                // Its cluster has waited the grace: re-planned around it; placed again on resuming.
                m_hooks.leave(id);
                rec.inPlanner = false;
                rec.parked = true;
                rec.assignment = unplaced(rec.assignment.version + 1, AssignmentState::Waiting,
                                          "waiting: paused for longer than the grace (" + millis(m_config.rejoinGrace) +
                                              "); placed again when it resumes");
                log::info(kArea, "node " + shortId(id) + " '" + rec.name + "' is still paused after " +
                                     millis(m_config.rejoinGrace) + "; re-planning its cluster without it");
                if (m_hooks.awayChanged)
                    m_hooks.awayChanged();
                m_hooks.changed();
                persist(rec);
                out.send(rec.link.lock(), std::make_shared<const Assignment>(rec.assignment));
            } else if (rec.presence == Presence::Lost && now >= rec.graceUntil) {
                rec.presence = Presence::Gone;
                if (rec.inPlanner)
                    m_hooks.leave(id);
                rec.inPlanner = false;
                rec.assignment = unplaced(rec.assignment.version + 1, AssignmentState::Waiting,
                                          "gone: no contact for longer than the rejoin grace period");
                log::info(kArea, "node " + shortId(id) + " '" + rec.name + "' is gone; re-planning without it");
                m_hooks.changed();
                persist(rec);
            }
            if (rec.awaitingVerdict && now >= rec.verdictDue) {
                log::warning(kArea, "node " + shortId(id) + " '" + rec.name + "': no reachability verdict within " +
                                        millis(m_config.verdictWait) + "; placing it as it is");
                placeAfterVerdict(rec);
            }
            online += rec.presence == Presence::Online;
        }
        // Told with each ack (and registration): a swarm that grew hears of it within one
        // heartbeat, one that shrank within one of the longer intervals.
        const auto pace = heartbeatPace(m_config.heartbeatInterval, online, m_config.heartbeatBudget);
        if (pace != m_pace)
            log::info(kArea, "heartbeat interval now " + millis(pace) + " for " + std::to_string(online) +
                                 " nodes online (a budget of " + std::to_string(int64_t(m_config.heartbeatBudget)) +
                                 " heartbeats a second)");
        m_pace = pace;
    }
    out.flush();
}
} // namespace rookery::coord
