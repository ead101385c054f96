// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/epoch_sampler.h"

#include "engine/common/error.h"
#include "engine/common/splitmix64.h"

namespace rookery::data {

EpochSampler::EpochSampler(int64_t datasetSize, uint64_t seed, Shard shard)
    : m_seed(seed)
{
    if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count)
        throw Error("invalid data shard " + std::to_string(shard.index) + " of " + std::to_string(shard.count));
    for (int64_t i = shard.index; i < datasetSize; i += shard.count)
        m_members.push_back(i);
    if (m_members.empty())
        throw Error("data shard " + std::to_string(shard.index) + " of " + std::to_string(shard.count) + " is empty");
}

void EpochSampler::shuffleFor(int64_t epoch)
{
    m_order = m_members;
    SplitMix64 rng{m_seed * 0x9e3779b97f4a7c15ull + uint64_t(epoch) + 1};
    for (size_t i = m_order.size() - 1; i > 0; --i)
        std::swap(m_order[i], m_order[rng.below(i + 1)]);
    m_orderEpoch = epoch;
}

std::vector<int64_t> EpochSampler::next(int64_t batchSize)
{
    if (batchSize < 1 || batchSize > shardSize())
        throw Error("batch size " + std::to_string(batchSize) + " must be between 1 and the shard's " +
                    std::to_string(shardSize()) + " samples");
    if (m_cursor.offset + batchSize > shardSize()) {
        ++m_cursor.epoch;
        m_cursor.offset = 0;
    }
    if (m_orderEpoch != m_cursor.epoch)
        shuffleFor(m_cursor.epoch);
    std::vector<int64_t> batch(m_order.begin() + m_cursor.offset, m_order.begin() + m_cursor.offset + batchSize);
    m_cursor.offset += batchSize;
    return batch;
}

void EpochSampler::setCursor(SamplerCursor cursor)
{
    if (cursor.epoch < 0 || cursor.offset < 0 || cursor.offset > shardSize())
        throw Error("invalid data cursor (epoch " + std::to_string(cursor.epoch) + ", offset " +
                    std::to_string(cursor.offset) + ")");
    m_cursor = cursor;
}

} // namespace rookery::data
