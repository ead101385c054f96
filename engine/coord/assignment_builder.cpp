// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/assignment_builder.h"

#include <algorithm>

namespace rookery::coord {
namespace {

struct Holder
{
    std::string nodeId;
    size_t first, last;       // what it held before this plan
    size_t nowFirst, nowLast; // what it holds in this plan
    int cluster;              // where it is now

    // Of [lo, hi): the layers it held and still serves live. It answers a fetch from the
    // stage it runs now, so layers it gave up in this plan are not in its reply.
    size_t serves(size_t lo, size_t hi) const;
};

size_t overlap(size_t a0, size_t a1, size_t b0, size_t b1)
{
    const size_t lo = std::max(a0, b0), hi = std::min(a1, b1);
    return hi > lo ? hi - lo : 0;
}

size_t Holder::serves(size_t lo, size_t hi) const
{
    return overlap(lo, hi, std::max(first, nowFirst), std::min(last, nowLast));
}

// Layers in [first, last) that a node did not hold before: what it must fetch.
std::pair<size_t, size_t> newLayers(const Assignment &now, const Assignment *before)
{
    if (!before || !before->isTraining())
        return {now.firstLayer, now.lastLayer};
    // A contiguous range minus a contiguous range: at most two pieces; report their span.
    if (before->firstLayer <= now.firstLayer && now.lastLayer <= before->lastLayer)
        return {0, 0};
    if (now.firstLayer >= before->lastLayer || now.lastLayer <= before->firstLayer)
        return {now.firstLayer, now.lastLayer};
    const size_t lo =
        now.firstLayer < before->firstLayer ? now.firstLayer : std::max(now.firstLayer, before->lastLayer);
    const size_t hi = now.lastLayer > before->lastLayer ? now.lastLayer : std::min(now.lastLayer, before->firstLayer);
    return {lo, std::max(lo, hi)};
}

PeerRef peer(const std::string &id, const std::map<std::string, std::string> &addresses)
{
    if (id.empty())
        return {};
    const auto it = addresses.find(id);
    return {id, it == addresses.end() ? std::string() : it->second};
}

const Assignment *find(const std::map<std::string, Assignment> &m, const std::string &id)
{
    const auto it = m.find(id);
    return it == m.end() ? nullptr : &it->second;
}

} // namespace

std::map<std::string, Assignment> buildAssignments(const std::vector<Placement> &placements,
                                                   const std::map<std::string, std::string> &addresses,
                                                   const std::map<std::string, Assignment> &previous)
{
    std::map<std::string, Assignment> out;
    std::vector<Holder> holders; // trained before and still training
    for (const auto &p : placements) {
        Assignment a;
        a.state = p.training ? AssignmentState::Training : AssignmentState::Waiting;
        a.reason = p.reason;
        a.cluster = p.training ? p.cluster : -1;
        a.clusterCount = p.clusterCount;
        if (p.training) {
            a.stage = p.stage;
            a.stages = p.stages;
            a.firstLayer = p.firstLayer;
            a.lastLayer = p.lastLayer;
            a.previous = peer(p.previous, addresses);
            a.next = peer(p.next, addresses);
            for (const auto &r : p.rings) {
                // Only the neighbours become peers: a ring has a member per cluster.
                a.rings.push_back(ringSeat(r.id, r.firstLayer, r.lastLayer, r.members ? r.members->size() : 0, r.rank,
                                           [&](size_t k) { return peer((*r.members)[k], addresses); }));
            }
            a.shard = {p.cluster, p.clusterCount};
            if (const Assignment *before = find(previous, p.nodeId); before && before->isTraining())
                holders.push_back(
                    {p.nodeId, before->firstLayer, before->lastLayer, p.firstLayer, p.lastLayer, p.cluster});
        }
        out.emplace(p.nodeId, std::move(a));
    }
    for (auto &[id, a] : out) {
        if (!a.isTraining())
            continue;
        const Assignment *before = find(previous, id);
        const auto [lo, hi] = newLayers(a, before);
        if (lo >= hi) {
            // Same layers as before: a fetch it was told about still stands while its source trains.
            if (before && !before->weightsFrom.empty() && before->firstLayer == a.firstLayer &&
                before->lastLayer == a.lastLayer && find(out, before->weightsFrom.nodeId) &&
                find(out, before->weightsFrom.nodeId)->isTraining())
                a.weightsFrom = peer(before->weightsFrom.nodeId, addresses);
            continue;
        }
        const Holder *best = nullptr;
        std::pair<size_t, size_t> bestOverlap{0, 0}; // layers it serves live, layers it held
        for (const auto &h : holders) {
            if (h.nodeId == id)
                continue;
            const std::pair<size_t, size_t> o{h.serves(lo, hi), overlap(lo, hi, h.first, h.last)};
            if (o.second == 0)
                continue;
            bool better = !best || o > bestOverlap;
            if (best && o == bestOverlap) {
                const bool here = h.cluster == a.cluster, bestHere = best->cluster == a.cluster;
                better = here != bestHere ? here : h.nodeId < best->nodeId;
            }
            if (better) {
                best = &h;
                bestOverlap = o;
            }
        }
        if (best)
            a.weightsFrom = peer(best->nodeId, addresses);
    }
    return out;
}

void markUnreachable(std::map<std::string, Assignment> &assignments, const std::set<std::string> &unreachable)
{
    const auto mark = [&](PeerRef &p) { p.unreachable = !p.empty() && unreachable.count(p.nodeId) > 0; };
    for (auto &[id, a] : assignments) {
        a.unreachable = unreachable.count(id) > 0;
        mark(a.previous);
        mark(a.next);
        mark(a.weightsFrom);
        for (auto &r : a.rings) {
            mark(r.previous);
            mark(r.next);
        }
    }
}

void skipAway(std::vector<Placement> &placements, const std::set<std::string> &away)
{
    std::map<std::string, int> clusterOf; // of those training
    for (const auto &p : placements)
        if (p.training)
            clusterOf.emplace(p.nodeId, p.cluster);
    std::set<int> halted;
    for (const auto &id : away)
        if (const auto it = clusterOf.find(id); it != clusterOf.end())
            halted.insert(it->second);
    if (halted.empty())
        return;
    // Each ring's members without the halted clusters, made once and shared by its members.
    std::map<const std::vector<std::string> *, std::shared_ptr<const std::vector<std::string>>> kept;
    for (auto &p : placements) {
        if (!p.training)
            continue;
        const bool mineHalted = halted.count(p.cluster) > 0;
        for (auto &r : p.rings) {
            if (!r.members)
                continue;
            if (mineHalted) {
                r.members = std::make_shared<const std::vector<std::string>>(1, p.nodeId);
                r.rank = 0;
                continue;
            }
            auto &list = kept[r.members.get()];
            if (!list) {
                auto k = std::make_shared<std::vector<std::string>>();
                for (const auto &m : *r.members)
                    if (const auto it = clusterOf.find(m); it != clusterOf.end() && !halted.count(it->second))
                        k->push_back(m);
                list = std::move(k);
            }
            r.rank = size_t(std::find(list->begin(), list->end(), p.nodeId) - list->begin());
            r.members = list;
        }
    }
}

} // namespace rookery::coord
