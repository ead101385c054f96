// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/coord/assignment.h"
#include "engine/participant/net_ring_links.h"
#include "engine/swarm/outer_optimizer.h"
#include "engine/swarm/ring_averaging.h"

namespace rookery::participant {

/// One ring a stage averages with: its seat, its two neighbours, its links, the outer
/// step after each round, and its round numbering.
struct StageRing
{
    coord::RingRef ref;
    std::string next, previous;          // empty for a ring of one
    std::unique_ptr<NetRingLinks> links; // made for every ring: one may grow (a cluster comes back)
    swarm::OuterOptimizer outer;         // the step after each round (plain averaging unless the run says)
    /// The ring's round numbers (its offset, when this member was behind its ring).
    std::unique_ptr<swarm::RingAveraging> averaging;
    /// The previous member has trained to the end: no later round can complete, so the
    /// stage averages this ring no more until its members change (follow()).
    bool previousFinished = false;

    swarm::RingPlace place() const { return {ref.firstLayer, ref.lastLayer, int(ref.rank), int(ref.size)}; }
    bool alone() const { return ref.alone(); }
    void follow(const coord::RingRef &r);
};

/// One ring's part of a round: its layers' parameters, and what the round made of them.
struct RingJob
{
    StageRing *ring = nullptr;
    std::vector<NamedTensor> parameters; ///< the ring's layers, as they were before the round
    swarm::RingAveraging::Outcome outcome;
};

/// Runs round `round` of every job's ring at once, each on a thread of its own (the last
/// on the caller's): a ring waits only for its own members. One after another, a stage
/// waiting out a silent member in one ring reached its next ring late, its partner there
/// gave up meanwhile, and clusters went on missing each other, round after round. An
/// exception in a ring's round (a malformed parameter name) becomes its outcome's error.
/// Each ring sums the differences from its outer optimizer's anchor where it has one
/// (the weights after its last round), in `precision`, carrying what its rounding left
/// out of the last round into the next (RingEncoding::carry).
void averageAtOnce(std::vector<RingJob> &jobs, int64_t round, ValuePrecision precision);

} // namespace rookery::participant
