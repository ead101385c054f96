// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "engine/coord/assignment.h"

namespace rookery::coord {

/// What a registration storm may leave unsaid. While volunteers keep arriving, each
/// planning round adds clusters, and every cluster added changes the ring size and
/// rank, the cluster count and the data shard of every node already placed; a new cut
/// also splits the rings' layer ranges. Re-sent each round, a 10,000-node ramp cost 3.18
/// pushes a node; holding only rings that stayed whole still cost 2.7 (1.9 of them
/// reseats). So for the storm's length, a placed node whose stage is the same (cluster,
/// stage, layers, pipeline neighbours) and which is not halted since keeps what it was
/// told:
/// - its published cluster count and shard (clusters then overlap a little in data for
///   the storm's length, which costs nothing but a few repeated samples);
/// - its published rings, with their layer ranges, whatever cuts came since. A ring
///   whose members all keep theirs stands as told; one that lost a member (it left,
///   moved to another stage or was halted) closes without it, in the same order.
/// Everyone else training (newcomers, nodes whose stage changed) forms the fresh plan's
/// rings among themselves only. So every ring a node is told of is whole, and nobody
/// waits for a peer that does not know it; a ring id may then stand for two disjoint
/// rings, which never talk to each other. Until the storm ends the groups do not average
/// with each other. A kept seat names its neighbours at their current `addresses`; the
/// caller marks who can be dialled afterwards (markUnreachable). When the storm is over,
/// the caller publishes `fresh` as it is: one more push to each node whose seat, shard or
/// count was held. Returns how many nodes' assignments differ from `fresh`.
///
/// Thread safety: reentrant.
size_t holdStormGrowth(std::map<std::string, Assignment> &fresh, const std::map<std::string, Assignment> &published,
                       const std::map<std::string, std::string> &addresses);

} // namespace rookery::coord
