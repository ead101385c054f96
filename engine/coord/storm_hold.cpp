// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/storm_hold.h"

#include <algorithm>
#include <set>

namespace rookery::coord {
namespace {

const RingRef *seatIn(const Assignment &a, uint64_t ringId)
{
    const auto it = std::find_if(a.rings.begin(), a.rings.end(), [&](const RingRef &r) { return r.ringId == ringId; });
    return it == a.rings.end() ? nullptr : &*it;
}

// The same stage as published, whatever the swarm's growth changed around it.
bool sameStage(const Assignment &now, const Assignment &was)
{
    if (!now.isTraining() || !was.isTraining())
        return false;
    Assignment same = now;
    same.clusterCount = was.clusterCount;
    same.shard = was.shard;
    return same.sameExceptRings(was);
}

// Whether the ring's published seat of this member still stands in the fresh plan.
bool seatStands(const RingRef &was, const Assignment *now, bool stageKept)
{
    if (!now || !stageKept)
        return false;
    const RingRef *is = seatIn(*now, was.ringId);
    if (!is || is->firstLayer != was.firstLayer || is->lastLayer != was.lastLayer)
        return false;
    // Halted (skipAway) or cut off: a member of a ring that is now alone leaves it.
    return was.alone() || !is->alone();
}

// The neighbour at the address it registered last (it may have moved since the seat was
// published); its id is what the seat is about.
void readdress(PeerRef &p, const std::map<std::string, std::string> &addresses)
{
    if (p.empty())
        return;
    if (const auto it = addresses.find(p.nodeId); it != addresses.end())
        p.address = it->second;
}

} // namespace

size_t holdStormGrowth(std::map<std::string, Assignment> &fresh, const std::map<std::string, Assignment> &published,
                       const std::map<std::string, std::string> &addresses)
{
    // Rings whose published seats all stand: those are held.
    std::map<uint64_t, bool> held;
    for (const auto &[id, was] : published) {
        if (!was.isTraining())
            continue;
        const auto it = fresh.find(id);
        const Assignment *now = it == fresh.end() ? nullptr : &it->second;
        const bool stageKept = now && sameStage(*now, was);
        for (const auto &r : was.rings) {
            auto [h, inserted] = held.emplace(r.ringId, true);
            if (h->second && !seatStands(r, now, stageKept))
                h->second = false;
        }
    }
    size_t changed = 0;
    for (auto &[id, a] : fresh) {
        if (!a.isTraining())
            continue;
        const auto it = published.find(id);
        const Assignment *was = it == published.end() ? nullptr : &it->second;
        const bool stageKept = was && sameStage(a, *was);
        bool differs = false;
        if (stageKept && (a.clusterCount != was->clusterCount || a.shard.index != was->shard.index ||
                          a.shard.count != was->shard.count)) {
            a.clusterCount = was->clusterCount;
            a.shard = was->shard;
            differs = true;
        }
        for (auto &r : a.rings) {
            const auto h = held.find(r.ringId);
            if (h == held.end() || !h->second)
                continue; // a new ring, or one that changes for all its members
            const RingRef *seat = was && stageKept ? seatIn(*was, r.ringId) : nullptr;
            RingRef kept = seat ? *seat : RingRef{r.ringId, r.firstLayer, r.lastLayer, 0, 1, {}, {}};
            readdress(kept.previous, addresses);
            readdress(kept.next, addresses);
            if (!(kept == r)) {
                r = kept;
                differs = true;
            }
        }
        changed += differs ? 1 : 0;
    }
    return changed;
}

} // namespace rookery::coord
