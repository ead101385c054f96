// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/swarm/ring_allreduce.h"

namespace rookery::swarm {

/// Where a stage sits in one ring: the layers the ring averages and the member's place.
struct RingPlace
{
    size_t firstLayer = 0; ///< the ring averages layers [firstLayer, lastLayer)
    size_t lastLayer = 0;
    int rank = 0; ///< this member's place in the ring
    int size = 1; ///< members in the ring
};

/// The bookkeeping around ringAllReduceAverage for a stage that averages its parameters
/// with one or more rings: picks the parameters of a ring's layers (named "<layer>.<what>",
/// by global layer index), flattens them into one float vector in their order, averages
/// it, and writes the result back into the tensors.
///
/// Round numbers: the caller numbers rounds by its optimizer step (step / interval), so
/// the members of a ring agree without talking. A member that resumed behind its ring
/// (a restart from an older checkpoint), or that gave up a round its neighbours went on
/// with, would never meet the others: when a round shows a neighbour already in a later
/// one, the member joins that round at once with the same values (the neighbour waits
/// in it), reading the neighbour's chunk first, and keeps the difference as an offset
/// for its next rounds. Adopting the offset for the next round instead made two members
/// overtake each other forever, each one round ahead of the other. A stage keeps one
/// RingAveraging per ring, as its rings average at once and each keeps step with its
/// own members.
///
/// Thread safety: one thread at a time (the stage thread averages between steps).
class RingAveraging
{
public:
    /// The furthest a neighbour's round may be ahead for this member to join it.
    static constexpr uint64_t kMaxRoundJump = 100'000;

    /// The outcome of averaging one ring.
    struct Outcome
    {
        RingResult result;                   ///< complete, or why not
        std::vector<NamedTensor> parameters; ///< the ring's parameters; averaged when complete
    };

    /// `timeout`: how long a ring step waits for the previous member before the round
    /// is abandoned.
    explicit RingAveraging(std::chrono::milliseconds timeout);

    /// Averages the parameters of `place`'s layers among `parameters` (a stage's
    /// parameters; float32) with the ring behind `links`, as round `round` (offset as
    /// described above). When the round is not complete, the returned parameters hold
    /// the values they had. Every parameter name must start with its layer index.
    /// `encoding`: how the values travel (a base of another size than the ring's
    /// parameters is not used).
    ///
    /// A round that ends on a base mismatch ends on every member, so every member starts
    /// the next from its own values (base 0). A previous member that names a base in
    /// that next round again is not honest (a forged base ends its neighbours' rounds at
    /// no cost to itself): the outcome is then `rejected`, blaming it.
    Outcome average(std::vector<NamedTensor> parameters, const RingPlace &place, int64_t round, RingLinks &links,
                    RingEncoding encoding = {});

    /// The offset added to round numbers so far (0 unless this member was behind).
    int64_t roundOffset() const { return m_roundOffset; }

private:
    std::chrono::milliseconds m_timeout;
    int64_t m_roundOffset = 0;
    int m_baseMismatchesInARow = 0;
};

/// The global layer index of a parameter name: 3 for "3.weight". Throws
/// std::invalid_argument for a name that does not start with one.
size_t layerOfParameter(const std::string &name);

/// The float32 values of `tensors` one after the other, in their order. (Stage
/// parameters are float32; the bytes are taken as such.)
std::vector<float> flattenParameters(const std::vector<NamedTensor> &tensors);

/// Writes `values` (as flattenParameters() laid them out) back into `tensors`. Throws
/// rookery::Error when the counts differ.
void unflattenParameters(std::span<const float> values, std::vector<NamedTensor> &tensors);

/// What averaging a snapshot means for weights that trained on meanwhile: for each
/// tensor of `after` (by name), its value in `current` plus (after - before), so the
/// steps taken since the snapshot are kept. `before` holds the snapshot's values of the
/// same tensors. Throws rookery::Error when a name is missing or the sizes differ.
std::vector<NamedTensor> movedByAveraging(const std::vector<NamedTensor> &current,
                                          const std::vector<NamedTensor> &before,
                                          const std::vector<NamedTensor> &after);

} // namespace rookery::swarm
