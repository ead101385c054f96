// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "engine/net/link.h"
#include "engine/net/net_context.h"

namespace rookery::net {

/// An emulated internet path, for tests and benchmarks only: every message a link
/// receives is held back as if it had crossed a link of `rateMbit` with a one-way
/// `delay` (plus uniform jitter of +-`jitter`), in order. Off by default; the product
/// switches it on only through the testing option ROOKERY_WAN_EMULATION.
struct WanEmulationConfig
{
    std::chrono::microseconds delay{0};
    std::chrono::microseconds jitter{0};
    double rateMbit = 0; ///< 0: no bandwidth cap
    uint64_t seed = 1;   ///< for the jitter

    bool enabled() const { return delay.count() > 0 || jitter.count() > 0 || rateMbit > 0; }
    /// "delay 50 ms, jitter 5 ms, 50 Mbit/s" for log lines.
    std::string describe() const;
};

/// Parses "delay_ms=50,jitter_ms=5,rate_mbit=50" (any subset, any order; empty: off).
/// Throws rookery::Error naming the bad key or value.
WanEmulationConfig parseWanEmulation(const std::string &spec);

/// The testing option: parses the environment variable ROOKERY_WAN_EMULATION; off when
/// it is unset or empty. Throws rookery::Error when it is malformed.
WanEmulationConfig wanEmulationFromEnvironment();

/// Wraps `events` so that each link's messages reach them late, as over `config`'s
/// path: a message arriving at t after b bytes is delivered at
/// max(t, the previous message's serialisation end) + 8b / rate + delay + jitter, never
/// before the message before it. `closed` follows the link's last message; `opened`
/// and `writable` pass at once. Each side delays what it receives, so with the option
/// on at both ends each direction gets the one-way delay once, and a round trip two.
/// The cap spaces deliveries but does not slow the sender (no backpressure): what is
/// in flight is bounded by the user (a pipeline's window, a ring's chunks).
///
/// With a disabled config, returns `events` unchanged.
/// Thread safety: the returned events may be called from any thread; the wrapped ones
/// run on `context`'s threads, one at a time per link, in order. Keep `context`
/// alive (and running) while links use the events.
LinkEvents emulateWan(NetContext &context, const WanEmulationConfig &config, LinkEvents events);

} // namespace rookery::net
