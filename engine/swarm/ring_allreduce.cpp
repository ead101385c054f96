// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/ring_allreduce.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "engine/common/error.h"

namespace rookery::swarm {
namespace {

using Clock = std::chrono::steady_clock;

int wrap(int i, int n) { return ((i % n) + n) % n; }

// Whether `received`, the sum of `members` members' values of a chunk (less the base
// each, when there is one), can be honest, judged against this member's own values of
// it: all finite, and its mean no farther from them than kPlausibleDistance times their
// norm (plus a little, for chunks near zero). The members' weights were averaged at the
// last round and have moved only by the steps since, so an honest mean sits close; a
// chunk scaled up, sign-flipped or replaced sits far. Empty when plausible, else why not.
std::string implausible(std::span<const float> received, std::span<const float> own, std::span<const float> base,
                        int members)
{
    double distance = 0, norm = 0;
    const double inv = 1.0 / double(members);
    for (size_t i = 0; i < own.size(); ++i) {
        if (!std::isfinite(received[i]))
            return "a value that is not finite (element " + std::to_string(i) + ")";
        // The base cancels out of the distance, not out of the norm.
        const double mine = base.empty() ? double(own[i]) : double(own[i]) - double(base[i]);
        const double d = double(received[i]) * inv - mine;
        distance += d * d;
        norm += double(own[i]) * double(own[i]);
    }
    distance = std::sqrt(distance);
    norm = std::sqrt(norm);
    const double bound = kPlausibleDistance * norm + 0.01 * std::sqrt(double(own.size()));
    if (distance <= bound)
        return {};
    char text[160];
    std::snprintf(text, sizeof text, "a mean %.3g away from this member's own values (norm %.3g, limit %.3g)", distance,
                  norm, bound);
    return text;
}

} // namespace

std::pair<size_t, size_t> chunkRange(size_t count, int parts, int chunk)
{
    const size_t base = count / size_t(parts), extra = count % size_t(parts);
    const size_t begin = size_t(chunk) * base + std::min(size_t(chunk), extra);
    return {begin, begin + base + (size_t(chunk) < extra ? 1 : 0)};
}

RingResult ringAllReduceAverage(std::span<float> values, int rank, int size, uint64_t round, RingLinks &links,
                                std::chrono::milliseconds timeout, const RingEncoding &encoding)
{
    if (size < 1 || rank < 0 || rank >= size)
        throw Error("ring all-reduce: rank " + std::to_string(rank) + " of " + std::to_string(size) + " is invalid");
    const std::span<const float> base = encoding.base;
    if (!base.empty() && (base.size() != values.size() || encoding.baseTag == 0))
        throw Error("ring all-reduce: a base of " + std::to_string(base.size()) + " values (tag " +
                    std::to_string(encoding.baseTag) + ") for " + std::to_string(values.size()) + " values");
    const uint64_t tag = base.empty() ? 0 : encoding.baseTag;
    const ValuePrecision precision = base.empty() ? ValuePrecision::Float32 : encoding.precision;
    const std::span<float> carry = precision == ValuePrecision::Float32 ? std::span<float>() : encoding.carry;
    if (!carry.empty() && carry.size() != values.size())
        throw Error("ring all-reduce: a carry of " + std::to_string(carry.size()) + " values for " +
                    std::to_string(values.size()) + " values");
    RingResult result;
    const auto start = Clock::now();
    if (size == 1) {
        result.complete = true;
        return result;
    }
    // Work on a copy so that an abandoned round leaves the caller's values intact.
    std::vector<float> work(values.begin(), values.end());
    for (size_t i = 0; i < base.size(); ++i)
        work[i] -= base[i];
    for (size_t i = 0; i < carry.size(); ++i)
        work[i] += carry[i];
    std::vector<float> leftOut(carry.size(), 0.0f); // this round's rounding errors, for `carry`
    std::vector<float> unrounded;
    auto slice = [&](int chunk) {
        auto [b, e] = chunkRange(work.size(), size, chunk);
        return std::span<float>(work.data() + b, e - b);
    };
    // A round this member cannot finish: the members after it in the ring would wait for
    // its chunks, so they hear at once that none will come.
    const auto abandon = [&](std::string why) {
        result.error = std::move(why);
        links.sendNext(roundEndedNotice(round));
        result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return result;
    };
    const int steps = 2 * (size - 1);
    for (int step = 0; step < steps; ++step) {
        const bool gather = step >= size - 1;
        const int s = gather ? step - (size - 1) : step;
        // Reduce-scatter: send chunk (rank - s), receive (rank - s - 1) and add.
        // All-gather: send the finished chunk (rank + 1 - s), receive (rank - s) and copy.
        const int sendChunk = gather ? wrap(rank + 1 - s, size) : wrap(rank - s, size);
        const int recvChunk = gather ? wrap(rank - s, size) : wrap(rank - s - 1, size);
        auto out = slice(sendChunk);
        // In place: the owner of a summed chunk keeps what the others will hold. Each
        // chunk is rounded by this member once at most with any error (what it forwards
        // in all-gather is on the grid already).
        if (!carry.empty())
            unrounded.assign(out.begin(), out.end());
        roundForPrecision(out, precision);
        if (!carry.empty()) {
            const size_t at = size_t(out.data() - work.data());
            for (size_t i = 0; i < out.size(); ++i)
                leftOut[at + i] += unrounded[i] - out[i];
        }
        links.sendNext({round, step, sendChunk, std::vector<float>(out.begin(), out.end()), tag, precision});
        result.bytesSent += precisionBytes(out.size(), precision);

        const auto deadline = Clock::now() + timeout;
        std::optional<RingChunk> in;
        for (;;) {
            in = links.receivePrevious(deadline);
            if (!in) {
                // Nothing before the deadline: the links were cancelled (the ring's members
                // changed, or the stage stops), or the previous member is silent.
                return abandon("ring round " + std::to_string(round) +
                               (Clock::now() < deadline ? ": called off (the ring changed, or this stage stops)"
                                                        : ": no data from the previous member within " +
                                                              std::to_string(timeout.count()) + " ms") +
                               " (step " + std::to_string(step) + ")");
            }
            if (in->round >= round)
                break; // older rounds' leftovers are skipped
        }
        if (in->step == kRoundEndedStep) { // this round, or a later one the previous member gave up
            result.previousFinished = in->chunk == kTrainedToTheEnd;
            return abandon("ring round " + std::to_string(round) +
                           (result.previousFinished
                                ? std::string(": the previous member has trained to the end")
                                : ": the previous member gave " +
                                      (in->round == round ? "this round" : "round " + std::to_string(in->round)) +
                                      " up (a member went silent or left)") +
                           " (step " + std::to_string(step) + ")");
        }
        if (in->round != round || in->step != step || in->chunk != recvChunk) {
            std::string why = "ring round " + std::to_string(round) + ": out-of-step chunk (round " +
                              std::to_string(in->round) + ", step " + std::to_string(in->step) + ", chunk " +
                              std::to_string(in->chunk) + "; expected step " + std::to_string(step) + ", chunk " +
                              std::to_string(recvChunk) + ")";
            if (in->round > round) { // the caller may join that round: no notice for this one
                result.error = std::move(why);
                result.newer = std::move(*in);
                result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
                return result;
            }
            return abandon(std::move(why));
        }
        if (in->base != tag) {
            result.baseMismatch = true;
            result.previousBase = in->base;
            return abandon("ring round " + std::to_string(round) + ": the previous member averages from " +
                           (in->base ? "another base" : "its own values") + ", this one from " +
                           (tag ? "the last round's" : "its own values") +
                           " (it missed a round, or restarted); the next round starts from the members' own values");
        }
        auto dst = slice(recvChunk);
        if (in->values.size() != dst.size())
            return abandon("ring round " + std::to_string(round) + ": chunk " + std::to_string(recvChunk) + " holds " +
                           std::to_string(in->values.size()) + " values, expected " + std::to_string(dst.size()) +
                           " (members disagree on the model?)");
        // Reduce-scatter brings the sum of s + 1 members' values, all-gather the sum of
        // all of them: either way comparable with this member's own values of the chunk.
        // One that cannot be honest is replaced by what those members would have sent
        // had they all held this member's values, and the round goes on: the ring
        // completes (nobody waits out a timeout) and the poison stops here.
        const auto [ob, oe] = chunkRange(values.size(), size, recvChunk);
        const std::span<const float> own(values.data() + ob, oe - ob);
        const auto ownBase = base.empty() ? base : base.subspan(ob, oe - ob);
        const int members = gather ? size : s + 1;
        if (const std::string why = implausible(in->values, own, ownBase, members); !why.empty()) {
            if (!result.rejected)
                result.rejection = "ring round " + std::to_string(round) + ": refused the previous member's chunk " +
                                   std::to_string(recvChunk) + " (step " + std::to_string(step) + "): " + why;
            result.rejected = true;
            for (size_t i = 0; i < own.size(); ++i)
                in->values[i] = (ownBase.empty() ? own[i] : own[i] - ownBase[i]) * float(members);
        }
        if (gather)
            std::copy(in->values.begin(), in->values.end(), dst.begin());
        else
            for (size_t i = 0; i < dst.size(); ++i)
                dst[i] += in->values[i];
    }
    const float inv = 1.0f / float(size);
    for (size_t i = 0; i < work.size(); ++i)
        values[i] = work[i] * inv + (base.empty() ? 0.0f : base[i]);
    std::copy(leftOut.begin(), leftOut.end(), carry.begin());
    result.complete = true;
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
}

} // namespace rookery::swarm
