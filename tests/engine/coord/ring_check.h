// SPDX-License-Identifier: GPL-3.0-or-later
// Tests' check that the assignments a coordinator hands out describe whole rings.
#pragma once

#include <map>
#include <string>

#include "engine/coord/assignment.h"

namespace rookery::test {

// Every ring a node is told of is whole: its neighbours name it back, ranks and sizes
// agree, and as many members claim a ring of `size` as it has. "" when so, else why not.
inline std::string wholeRings(const std::map<std::string, coord::Assignment> &all)
{
    std::map<std::pair<uint64_t, size_t>, size_t> claims; // (ring, size) -> members
    for (const auto &[id, a] : all) {
        for (const auto &r : a.rings) {
            if (r.alone())
                continue;
            ++claims[{r.ringId, r.size}];
            const auto n = all.find(r.next.nodeId);
            if (n == all.end())
                return id + " names a next member nobody knows";
            const coord::RingRef *back = nullptr;
            for (const auto &x : n->second.rings)
                if (x.ringId == r.ringId)
                    back = &x;
            if (!back || back->previous.nodeId != id || back->size != r.size || back->rank != (r.rank + 1) % r.size)
                return id + "'s next member " + r.next.nodeId + " does not name it back";
        }
    }
    std::map<uint64_t, int> ringsById;
    for (const auto &[key, members] : claims) {
        if (members != key.second)
            return "ring " + std::to_string(key.first) + " of " + std::to_string(key.second) + " has " +
                   std::to_string(members) + " members";
        if (++ringsById[key.first] > 1)
            return "ring " + std::to_string(key.first) + " is told in two sizes";
    }
    return {};
}

} // namespace rookery::test
