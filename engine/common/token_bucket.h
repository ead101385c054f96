// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>

namespace rookery {

/// A token bucket for byte rates (the governor's upload and download caps). It never
/// blocks: reserve() books the bytes and says how long the caller must wait before
/// using them, so an asynchronous sender can arm a timer instead of stalling its
/// io_context thread. A rate of 0 means unlimited.
///
/// Thread safety: all methods may be called from any thread.
class TokenBucket
{
public:
    using Clock = std::chrono::steady_clock;
    using NowFn = std::function<Clock::time_point()>;

    /// `burstBytes` is how much may go at once after a quiet spell (default: 1/4 s worth,
    /// at least 64 KiB).
    explicit TokenBucket(uint64_t bytesPerSecond = 0, uint64_t burstBytes = 0, NowFn now = {});

    /// Books `bytes`; returns how long to wait before sending them (zero when allowed now).
    std::chrono::nanoseconds reserve(uint64_t bytes);
    /// Changes the rate; takes effect for the next reserve(). 0 = unlimited.
    void setRate(uint64_t bytesPerSecond, uint64_t burstBytes = 0);
    uint64_t rate() const;

private:
    Clock::time_point now() const { return m_now ? m_now() : Clock::now(); }

    mutable std::mutex m_mutex;
    NowFn m_now;
    uint64_t m_rate = 0;
    double m_burst = 0;
    double m_tokens = 0; // may go negative: bytes booked ahead of time
    Clock::time_point m_last;
};

} // namespace rookery
