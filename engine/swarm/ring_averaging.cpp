// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/ring_averaging.h"

#include <cstring>
#include <optional>
#include <utility>

#include "engine/common/error.h"

namespace rookery::swarm {

namespace {

// A ring's links with one chunk put back in front: the chunk a round read before it
// knew that it was behind.
class PutBack final : public RingLinks
{
public:
    PutBack(RingLinks &links, RingChunk first)
        : m_links(links)
        , m_first(std::move(first))
    { }
    void sendNext(RingChunk chunk) override { m_links.sendNext(std::move(chunk)); }
    std::optional<RingChunk> receivePrevious(std::chrono::steady_clock::time_point deadline) override
    {
        if (m_first)
            return std::exchange(m_first, std::nullopt);
        return m_links.receivePrevious(deadline);
    }

private:
    RingLinks &m_links;
    std::optional<RingChunk> m_first;
};

} // namespace

size_t layerOfParameter(const std::string &name) { return size_t(std::stoul(name.substr(0, name.find('.')))); }

std::vector<float> flattenParameters(const std::vector<NamedTensor> &tensors)
{
    size_t count = 0;
    for (const auto &t : tensors)
        count += t.data.size() / sizeof(float);
    std::vector<float> flat(count);
    size_t at = 0;
    for (const auto &t : tensors) {
        std::memcpy(flat.data() + at, t.data.data(), t.data.size());
        at += t.data.size() / sizeof(float);
    }
    return flat;
}

void unflattenParameters(std::span<const float> values, std::vector<NamedTensor> &tensors)
{
    size_t count = 0;
    for (const auto &t : tensors)
        count += t.data.size() / sizeof(float);
    if (count != values.size())
        throw Error("ring averaging: " + std::to_string(values.size()) + " values for parameters holding " +
                    std::to_string(count));
    size_t at = 0;
    for (auto &t : tensors) {
        std::memcpy(t.data.data(), values.data() + at, t.data.size());
        at += t.data.size() / sizeof(float);
    }
}

std::vector<NamedTensor> movedByAveraging(const std::vector<NamedTensor> &current,
                                          const std::vector<NamedTensor> &before, const std::vector<NamedTensor> &after)
{
    const auto find = [](const std::vector<NamedTensor> &in, const std::string &name) -> const NamedTensor & {
        for (const auto &t : in)
            if (t.name == name)
                return t;
        throw Error("ring averaging: no parameter named '" + name + "' to apply the round to");
    };
    std::vector<NamedTensor> out;
    out.reserve(after.size());
    for (const auto &a : after) {
        const NamedTensor &b = find(before, a.name);
        NamedTensor c = find(current, a.name);
        if (a.dtype != DType::Float32 || b.dtype != DType::Float32 || c.dtype != DType::Float32 ||
            a.data.size() != b.data.size() || a.data.size() != c.data.size())
            throw Error("ring averaging: parameter '" + a.name + "' changed its size during the round");
        const size_t n = a.data.size() / sizeof(float);
        std::vector<float> va(n), vb(n), vc(n);
        std::memcpy(va.data(), a.data.data(), a.data.size());
        std::memcpy(vb.data(), b.data.data(), b.data.size());
        std::memcpy(vc.data(), c.data.data(), c.data.size());
        for (size_t i = 0; i < n; ++i)
            vc[i] += va[i] - vb[i];
        std::memcpy(c.data.data(), vc.data(), c.data.size());
        out.push_back(std::move(c));
    }
    return out;
}

RingAveraging::RingAveraging(std::chrono::milliseconds timeout)
    : m_timeout(timeout)
{ }

RingAveraging::Outcome RingAveraging::average(std::vector<NamedTensor> parameters, const RingPlace &place,
                                              int64_t round, RingLinks &links, RingEncoding encoding)
{
    Outcome outcome;
    for (auto &p : parameters)
        if (const size_t l = layerOfParameter(p.name); l >= place.firstLayer && l < place.lastLayer)
            outcome.parameters.push_back(std::move(p));
    std::vector<float> flat = flattenParameters(outcome.parameters);
    if (encoding.base.size() != flat.size()) // the ring's layers changed since the base
        encoding.base = {};
    if (encoding.carry.size() != flat.size())
        encoding.carry = {};
    const uint64_t id = uint64_t(round + m_roundOffset);
    outcome.result = ringAllReduceAverage(flat, place.rank, place.size, id, links, m_timeout, encoding);
    if (!outcome.result.complete && outcome.result.newer && outcome.result.newer->round > id &&
        outcome.result.newer->round - id > kMaxRoundJump) {
        // No member can be that far ahead (a day of rounds every second): a forged round
        // number, which would otherwise move this member's rounds there for good.
        outcome.result.error = "the previous member announced round " + std::to_string(outcome.result.newer->round) +
                               ", more than " + std::to_string(kMaxRoundJump) + " ahead of this member's " +
                               std::to_string(id) + "; not followed";
        outcome.result.newer.reset();
    }
    if (!outcome.result.complete && outcome.result.newer && outcome.result.newer->round > id) {
        // A neighbour is in a later round and waits there: join it now, reading its
        // chunk first, and number the next rounds as the ring does.
        const uint64_t newer = outcome.result.newer->round;
        m_roundOffset += int64_t(newer - id);
        PutBack first(links, std::move(*outcome.result.newer));
        outcome.result = ringAllReduceAverage(flat, place.rank, place.size, newer, first, m_timeout, encoding);
    }
    if (outcome.result.complete)
        unflattenParameters(flat, outcome.parameters);
    m_baseMismatchesInARow = outcome.result.baseMismatch ? m_baseMismatchesInARow + 1 : 0;
    if (m_baseMismatchesInARow >= 2 && outcome.result.previousBase != 0 && !outcome.result.rejected) {
        outcome.result.rejected = true;
        outcome.result.rejection = "ring round " + std::to_string(id) +
                                   ": the previous member named a base again in the round after one that ended on "
                                   "a base mismatch, where every member starts from its own values";
    }
    return outcome;
}

} // namespace rookery::swarm
