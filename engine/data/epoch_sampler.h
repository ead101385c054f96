// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <vector>

namespace rookery::data {

/// Where a sampler stands; saved in checkpoints so a resumed run sees the same batches.
struct SamplerCursor
{
    int64_t epoch = 0;
    int64_t offset = 0;
    bool operator==(const SamplerCursor &) const = default;
};

/// Which slice of the data set a sampler draws from: samples whose index modulo
/// `count` equals `index`. The swarm gives each cluster its own shard.
struct Shard
{
    int index = 0;
    int count = 1;
};

/// Deterministic shuffled batches: every epoch is a fresh permutation derived only
/// from (seed, epoch), so the cursor alone restores the sampler exactly. A batch never
/// spans two epochs: the tail that does not fill a batch is skipped.
///
/// Thread safety: not thread-safe; one owner.
class EpochSampler
{
public:
    EpochSampler(int64_t datasetSize, uint64_t seed, Shard shard = {});

    /// Indices into the data set for the next batch; advances the cursor.
    std::vector<int64_t> next(int64_t batchSize);

    SamplerCursor cursor() const { return m_cursor; }
    void setCursor(SamplerCursor cursor);
    int64_t shardSize() const { return int64_t(m_members.size()); }

private:
    void shuffleFor(int64_t epoch);

    std::vector<int64_t> m_members;
    std::vector<int64_t> m_order;
    uint64_t m_seed;
    int64_t m_orderEpoch = -1;
    SamplerCursor m_cursor;
};

} // namespace rookery::data
