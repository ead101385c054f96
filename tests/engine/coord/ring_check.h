// SPDX-License-Identifier: GPL-3.0-or-later
// Tests' check that the assignments a coordinator hands out describe whole rings.
#pragma once

#include <map>
#include <string>

#include "engine/coord/assignment.h"

namespace rookery::test {

// Every ring a node is told of is whole: following its next members, each names the one
// before it back with the next rank and the same size, and `size` steps lead back to the
// node. (One ring id may stand for disjoint rings, as in a registration storm.) "" when
// so, else why not.
inline std::string wholeRings(const std::map<std::string, coord::Assignment> &all)
{
    const auto seatIn = [](const coord::Assignment &a, uint64_t ringId) -> const coord::RingRef * {
        for (const auto &x : a.rings)
            if (x.ringId == ringId)
                return &x;
        return nullptr;
    };
    for (const auto &[id, a] : all) {
        for (const auto &r : a.rings) {
            if (r.alone())
                continue;
            std::string at = id;
            const coord::RingRef *seat = &r;
            for (size_t step = 0; step < r.size; ++step) {
                const auto n = all.find(seat->next.nodeId);
                if (n == all.end())
                    return at + " names a next member nobody knows in ring " + std::to_string(r.ringId);
                const coord::RingRef *back = seatIn(n->second, r.ringId);
                if (!back || back->previous.nodeId != at || back->size != r.size ||
                    back->rank != (seat->rank + 1) % r.size)
                    return at + "'s next member " + seat->next.nodeId + " does not name it back in ring " +
                           std::to_string(r.ringId);
                at = n->first;
                seat = back;
            }
            if (at != id)
                return "ring " + std::to_string(r.ringId) + " from " + id + " does not close after " +
                       std::to_string(r.size) + " members";
        }
    }
    return {};
}

} // namespace rookery::test
