// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "engine/coord/assignment.h"

namespace rookery::coord {

/// What a registration storm may leave unsaid. While volunteers keep arriving, each
/// planning round adds clusters, and every cluster added changes the ring size and
/// rank, the cluster count and the data shard of every node already placed: re-sent
/// each round, a 10,000-node ramp cost 3.18 pushes a node. This keeps, for the storm's
/// length, what placed nodes were told, wherever that stays true to itself:
/// - A node whose stage is the same (cluster, stage, layers, pipeline neighbours) keeps
///   its published cluster count and shard (clusters then overlap a little in data for
///   the storm's length, which costs nothing but a few repeated samples).
/// - A ring none of whose published members leave it, change stage or are halted keeps
///   their published seats; its newcomers sit in it alone (a ring of one: they train
///   and do not average) until the storm ends. Nobody names a newcomer and it names
///   nobody, so every ring a node is told of is whole: no member waits for a peer that
///   does not know it. A ring that lost or halted a member gets its fresh seats for all.
/// - A ring with no published members (new clusters with a new cut) forms at once.
/// A kept seat names its neighbours at their current `addresses`; the caller marks who
/// can be dialled afterwards (markUnreachable). When the storm is over, the caller publishes
/// `fresh` as it is: one more push to each node whose seat, shard or count was held.
/// Returns how many nodes' assignments differ from `fresh`.
///
/// Thread safety: reentrant.
size_t holdStormGrowth(std::map<std::string, Assignment> &fresh, const std::map<std::string, Assignment> &published,
                       const std::map<std::string, std::string> &addresses);

} // namespace rookery::coord
