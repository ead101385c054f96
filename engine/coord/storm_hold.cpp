// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/storm_hold.h"

#include <algorithm>
#include <set>
#include <vector>

namespace rookery::coord {
namespace {

const RingRef *seatIn(const std::vector<RingRef> &rings, uint64_t ringId)
{
    const auto it = std::find_if(rings.begin(), rings.end(), [&](const RingRef &r) { return r.ringId == ringId; });
    return it == rings.end() ? nullptr : &*it;
}

bool allAlone(const Assignment &a)
{
    return std::all_of(a.rings.begin(), a.rings.end(), [](const RingRef &r) { return r.alone(); });
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

// A node that keeps what it was told: the same stage, and not halted since (skipAway
// leaves a halted cluster's members alone in every ring).
bool keeps(const Assignment &now, const Assignment &was)
{
    return sameStage(now, was) && !(allAlone(now) && !allAlone(was));
}

PeerRef peerAt(const std::string &id, const std::map<std::string, std::string> &addresses)
{
    const auto it = addresses.find(id);
    return {id, it == addresses.end() ? std::string() : it->second};
}

// Seats `members` (ring order) in ring `ref`'s id and layers.
void seat(std::map<std::string, std::vector<RingRef>> &out, const RingRef &ref, const std::vector<std::string> &members,
          const std::map<std::string, std::string> &addresses)
{
    for (size_t k = 0; k < members.size(); ++k)
        out[members[k]].push_back(ringSeat(ref.ringId, ref.firstLayer, ref.lastLayer, members.size(), k,
                                           [&](size_t m) { return peerAt(members[m], addresses); }));
}

// One published ring as its members were told it: the members in rank order, found by
// following each seat's next member. Empty when the seats do not close into a ring of
// the size they claim (then each member sits alone in it rather than wait for a peer).
std::vector<std::string> publishedRing(const std::map<std::string, Assignment> &published, const std::string &start,
                                       const RingRef &seatOfStart)
{
    std::vector<std::string> members{start};
    for (std::string at = seatOfStart.next.nodeId; at != start;) {
        const auto it = published.find(at);
        const RingRef *s = it == published.end() ? nullptr : seatIn(it->second.rings, seatOfStart.ringId);
        if (!s || s->size != seatOfStart.size || members.size() >= seatOfStart.size)
            return {};
        members.push_back(at);
        at = s->next.nodeId;
    }
    if (members.size() != seatOfStart.size)
        return {};
    // Ranks: start is seatOfStart.rank, each next one more (mod size).
    std::rotate(members.begin(), members.begin() + long((members.size() - seatOfStart.rank) % members.size()),
                members.end());
    return members;
}

// `seats` (one per ring) in the order of `order`'s ring ids.
std::vector<RingRef> inOrderOf(const std::vector<RingRef> &order, const std::vector<RingRef> &seats)
{
    std::vector<RingRef> out;
    for (const RingRef &r : order)
        if (const RingRef *s = seatIn(seats, r.ringId))
            out.push_back(*s);
    return out;
}

} // namespace

size_t holdStormGrowth(std::map<std::string, Assignment> &fresh, const std::map<std::string, Assignment> &published,
                       const std::map<std::string, std::string> &addresses)
{
    // Who keeps what it was told.
    std::set<std::string> kept;
    for (const auto &[id, was] : published)
        if (const auto it = fresh.find(id); it != fresh.end() && keeps(it->second, was))
            kept.insert(id);

    // The rings they were told: each stands whole, or closes without its members that
    // left, moved or were halted.
    std::map<std::string, std::vector<RingRef>> seats; // kept nodes' rings, then the others'
    std::set<std::pair<uint64_t, std::string>> seen;   // (ring, member) already seated
    for (const std::string &id : kept) {
        for (const RingRef &r : published.at(id).rings) {
            if (seen.count({r.ringId, id}))
                continue;
            std::vector<std::string> members =
                r.alone() ? std::vector<std::string>{id} : publishedRing(published, id, r);
            if (members.empty()) // not a whole ring: this node sits alone in it
                members = {id};
            for (const auto &m : members)
                seen.insert({r.ringId, m});
            std::erase_if(members, [&](const std::string &m) { return !kept.count(m); });
            seat(seats, r, members, addresses);
        }
    }
    // Everyone else training (newcomers, and nodes whose stage changed): the fresh rings,
    // among themselves only, in the fresh order. Nobody kept names them, nor they it.
    std::map<uint64_t, std::vector<std::pair<size_t, std::string>>> others; // ring -> (rank, id)
    std::map<uint64_t, RingRef> refs;
    for (const auto &[id, a] : fresh) {
        if (!a.isTraining() || kept.count(id))
            continue;
        for (const RingRef &r : a.rings) {
            if (r.alone()) { // halted, or the range's only holder
                seats[id].push_back(r);
                continue;
            }
            others[r.ringId].emplace_back(r.rank, id);
            refs.emplace(r.ringId, r);
        }
    }
    for (auto &[ring, members] : others) {
        std::sort(members.begin(), members.end());
        std::vector<std::string> ids;
        for (const auto &m : members)
            ids.push_back(m.second);
        seat(seats, refs.at(ring), ids, addresses);
    }

    size_t changed = 0;
    for (auto &[id, a] : fresh) {
        if (!a.isTraining())
            continue;
        const Assignment before = a;
        if (kept.count(id)) {
            const Assignment &was = published.at(id);
            a.clusterCount = was.clusterCount;
            a.shard = was.shard;
        }
        // In the order the node was told its rings (kept), or the fresh plan's.
        a.rings = inOrderOf(kept.count(id) ? published.at(id).rings : a.rings, seats[id]);
        changed += a == before ? 0 : 1;
    }
    return changed;
}

} // namespace rookery::coord
