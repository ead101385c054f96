// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/token_bucket.h"

#include <algorithm>

namespace rookery {

TokenBucket::TokenBucket(uint64_t bytesPerSecond, uint64_t burstBytes, NowFn nowFn)
    : m_now(std::move(nowFn))
{
    setRate(bytesPerSecond, burstBytes);
}

void TokenBucket::setRate(uint64_t bytesPerSecond, uint64_t burstBytes)
{
    std::lock_guard lock(m_mutex);
    m_rate = bytesPerSecond;
    m_burst = double(burstBytes ? burstBytes : std::max<uint64_t>(bytesPerSecond / 4, 64 * 1024));
    m_tokens = std::min(m_tokens, m_burst);
    m_last = now();
}

uint64_t TokenBucket::rate() const
{
    std::lock_guard lock(m_mutex);
    return m_rate;
}

std::chrono::nanoseconds TokenBucket::reserve(uint64_t bytes)
{
    std::lock_guard lock(m_mutex);
    if (m_rate == 0)
        return std::chrono::nanoseconds(0);
    const auto t = now();
    const double elapsed = std::chrono::duration<double>(t - m_last).count();
    m_last = t;
    m_tokens = std::min(m_burst, m_tokens + elapsed * double(m_rate));
    m_tokens -= double(bytes);
    if (m_tokens >= 0)
        return std::chrono::nanoseconds(0);
    return std::chrono::nanoseconds(int64_t(-m_tokens / double(m_rate) * 1e9));
}

} // namespace rookery
