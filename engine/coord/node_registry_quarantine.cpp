// SPDX-License-Identifier: GPL-3.0-or-later
// NodeRegistry's quarantine: nodes whose values their peers refuse as poisoned are
// re-planned away, told why, and their keys banned for the run.
#include "engine/coord/node_registry.h"

#include <utility>

#include "engine/common/log.h"
#include "engine/coord/node_registry_record.h"

namespace rookery::coord {

using namespace registry_detail;

void NodeRegistry::weighComplaints(Record &reporter, Outbox &out)
{
    if (m_config.quarantineAfter <= 0)
        return;
    for (const auto &[accusedId, refused] : reporter.report.complaints) {
        const auto it = m_nodes.find(accusedId);
        if (it == m_nodes.end() || accusedId == reporter.nodeId || refused <= 0)
            continue;
        Record &accused = *it->second;
        if (accused.presence == Presence::Quarantined)
            continue;
        // A node can only have refused values of a peer its assignment gives it: others
        // it cannot accuse (a hostile reporter can frame its own neighbours at most).
        if (!reporter.assignment.namesPeer(accusedId)) {
            if (!std::exchange(reporter.complainedOfStrangers, true))
                log::warning(kArea, "ignored node " + shortId(reporter.nodeId) + "'s complaint about node " +
                                        shortId(accusedId) +
                                        ": its assignment takes no values from that node (said once per reporter)");
            continue;
        }
        auto &count = accused.complaintsAgainst[reporter.nodeId];
        if (refused <= count)
            continue; // counts only grow; an older or repeated report changes nothing
        count = refused;
        int64_t most = 0;
        for (const auto &[who, n] : accused.complaintsAgainst)
            most = std::max(most, n);
        const size_t reporters = accused.complaintsAgainst.size();
        if (most >= m_config.quarantineAfter || reporters >= 2)
            quarantine(accused,
                       reporters >= 2 ? std::to_string(reporters) + " peers refused its values as poisoned"
                                      : "a peer refused its values as poisoned " + std::to_string(most) + " times",
                       out);
    }
}

bool NodeRegistry::quarantine(const std::string &nodeId, const std::string &why)
{
    Outbox out;
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_nodes.find(nodeId);
        if (it == m_nodes.end() || it->second->presence == Presence::Quarantined)
            return false;
        quarantine(*it->second, why, out);
    }
    out.flush();
    return true;
}

void NodeRegistry::quarantine(Record &rec, const std::string &why, Outbox &out)
{
    ++m_counters.quarantined;
    rec.presence = Presence::Quarantined;
    if (rec.inPlanner)
        m_hooks.leave(rec.nodeId);
    rec.inPlanner = false;
    rec.parked = false;
    rec.assignment = unplaced(rec.assignment.version + 1, AssignmentState::Stopped, "quarantined: " + why);
    auto link = rec.link.lock();
    std::string host;
    if (link) {
        if (const auto h = m_linkHost.find(link.get()); h != m_linkHost.end())
            host = h->second;
        m_linkNode.erase(link.get());
        out.send(link, std::make_shared<const Assignment>(rec.assignment));
        out.send(link, net::Message(net::CoordinatorError{net::CoordinatorErrorCode::Banned,
                                                          "this node is quarantined for the run: " + why}));
        out.close(link, "quarantined");
    }
    if (!host.empty())
        m_bannedHosts.insert(host);
    // Revocation: every node hears the whole list and drops links from these keys.
    m_banned.nodeIds.push_back(rec.nodeId);
    const auto list = banListMessage();
    for (const auto &[id, other] : m_nodes)
        if (other->presence != Presence::Quarantined)
            if (auto l = other->link.lock(); l && m_linkNode.count(l.get()))
                out.send(l, list);
    log::warning(kArea, "quarantined node " + shortId(rec.nodeId) + " '" + rec.name + "': " + why +
                            "; re-planned without it, its key banned for the run" +
                            (host.empty() ? "" : " and new keys from " + host + " refused"));
    if (m_hooks.awayChanged)
        m_hooks.awayChanged();
    m_hooks.changed();
    persist(rec);
}

net::Message NodeRegistry::banListMessage() const
{
    // Within the receiver's list limit (4,096 entries): the newest, which matter most.
    constexpr size_t kMost = 4096;
    const auto &all = m_banned.nodeIds;
    const size_t from = all.size() > kMost ? all.size() - kMost : 0;
    return net::Message(net::BanList{std::vector<std::string>(all.begin() + ptrdiff_t(from), all.end())});
}

} // namespace rookery::coord
