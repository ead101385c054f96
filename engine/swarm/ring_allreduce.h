// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/common/value_precision.h"

namespace rookery::swarm {

/// One piece of a ring all-reduce in flight between neighbours.
struct RingChunk
{
    uint64_t round = 0; ///< which averaging round; stale chunks are dropped
    int step = 0;       ///< 0 .. 2(n-1)-1: reduce-scatter steps, then all-gather steps
    int chunk = 0;      ///< which slice of the flattened values
    std::vector<float> values;
    uint64_t base = 0; ///< 0: sums of the members' values; else of their differences from this base
    /// The values are exact in this precision and travel in it
    ValuePrecision precision = ValuePrecision::Float32;
};

/// The step of a notice that its sender takes no (further) part in a round: it gave the
/// round up (its previous member went silent, sent something out of step, or the ring
/// changed), or its stage has trained to the end. It carries no values. The member that
/// receives it ends that round at once and passes the notice on, so the members of a
/// ring that lost one end the round together instead of each waiting out its timeout.
inline constexpr int kRoundEndedStep = -1;
/// A notice's `chunk`: why its sender takes no part.
inline constexpr int kRoundGivenUp = 0;    ///< this round only
inline constexpr int kTrainedToTheEnd = 1; ///< nor any later one: its stage has trained to the end

/// The notice above, for round `round`.
inline RingChunk roundEndedNotice(uint64_t round, int why = kRoundGivenUp)
{
    return RingChunk{round, kRoundEndedStep, why, {}};
}

/// How a round's values travel.
struct RingEncoding
{
    /// When not empty: values every member holds alike, laid out as the values averaged
    /// (the weights after the ring's last round), named by `baseTag` (not 0). The ring
    /// then sums the members' differences from it, which are small, and adds it back.
    /// A member whose chunk names another base (it missed that round, or restarted)
    /// ends the round on both sides at once (`baseMismatch`).
    std::span<const float> base;
    uint64_t baseTag = 0;
    /// Chunks travel as bf16 (half the bytes) or blocks of int8 or int4 codes (a
    /// little over a quarter, or an eighth): every member rounds what it sends, the owner of a summed chunk its own
    /// copy too, so the members still end equal. Only with a base: weights themselves
    /// rounded would lose the small steps.
    ValuePrecision precision = ValuePrecision::Float32;
    /// Error feedback, with a base and a rounding precision (empty: none): what this
    /// member's rounding left out of the ring's sums last round, laid out as the
    /// values. It is added to this member's differences, and a complete round replaces
    /// it with what its own rounding left out this time, so nothing is lost for good:
    /// without it, a value that moves less than half its step (int8, int4) every round never
    /// moves at all. An abandoned round leaves it as it was.
    std::span<float> carry;
};

/// A ring member's two links: to the next member and from the previous one.
///
/// Thread safety: the all-reduce calls both from one thread.
class RingLinks
{
public:
    virtual ~RingLinks() = default;
    /// Sends to the next member. May block while the link's queue is full (a notice of
    /// kRoundEndedStep should not wait long: it is sent once, and lost if it cannot go).
    virtual void sendNext(RingChunk chunk) = 0;
    /// The next chunk from the previous member, or nullopt if none arrived before the
    /// deadline or the ring was cancelled.
    virtual std::optional<RingChunk> receivePrevious(std::chrono::steady_clock::time_point deadline) = 0;
};

struct RingResult
{
    bool complete = false; ///< false: a neighbour went silent; values are unchanged
    std::string error;     ///< why not complete
    /// The previous member sent values that cannot be honest; this member used its own
    /// in their place (`rejection` says where and why, for the first one).
    bool rejected = false;
    std::string rejection;
    uint64_t bytesSent = 0;
    double seconds = 0;
    /// When a neighbour was already in a later round: its chunk that ended this round,
    /// handed back so that the caller can join that round (RingAveraging does).
    std::optional<RingChunk> newer;
    /// The previous member averaged from another base (RingEncoding): the round ended
    /// at once; the next should start from the members' own values.
    bool baseMismatch = false;
    uint64_t previousBase = 0; ///< with baseMismatch: the base the previous member named (0: none)
    /// The previous member's stage has trained to the end (kTrainedToTheEnd): it takes
    /// part in no later round either.
    bool previousFinished = false;
};

/// How far from a member's own values of a chunk the mean of what it receives may be,
/// in multiples of the norm of its own values (see ringAllReduceAverage).
inline constexpr double kPlausibleDistance = 1.5;

/// Averages `values` in place with the other `size` members of a ring, as the
/// bandwidth-optimal ring all-reduce does: the values are cut into `size` chunks; in
/// n-1 reduce-scatter steps each member adds the chunk it receives to its own and
/// passes it on, so each ends up owning one fully summed chunk; n-1 all-gather steps
/// then circulate the sums. Every member sends 2(n-1)/n of the data in total,
/// whatever n is. Chunks of an older round are skipped; a chunk of a newer round, or
/// silence past `timeout`, abandons this round and leaves `values` as they were.
/// A member that abandons a round for any other reason than a newer one (which it
/// joins) tells its next member so (roundEndedNotice), and one that receives that
/// notice for its round ends the round and passes it on.
///
/// Every chunk received is checked before it is used, so that one bad member cannot
/// spread NaN or chosen weights: the mean it implies (the sum over the members it
/// holds) must be finite and within kPlausibleDistance times the norm of this member's
/// own values of that chunk (plus 0.01 per sqrt(element)) of them. A chunk that is not
/// is replaced by this member's own values times those members (as if they all agreed
/// with it) and the round goes on (`rejected`): the ring still completes, so nobody
/// waits out a timeout, and what this member passes on is plausible. Each honest member
/// checks what it receives, so a bad chunk is caught by the first honest member after
/// its sender: the previous member is the one to blame. The cost: that chunk's average
/// leans towards this member's values for the round.
///
/// With a base (RingEncoding), the chunks carry sums of differences from it, and the
/// check above is made on the mean it implies all the same.
///
/// Thread safety: one call per member at a time; members run concurrently.
RingResult ringAllReduceAverage(std::span<float> values, int rank, int size, uint64_t round, RingLinks &links,
                                std::chrono::milliseconds timeout, const RingEncoding &encoding = {});

/// The [begin, end) element range of chunk `chunk` when `count` values are cut into
/// `parts` nearly equal chunks.
std::pair<size_t, size_t> chunkRange(size_t count, int parts, int chunk);

} // namespace rookery::swarm
