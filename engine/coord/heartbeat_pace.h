// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstddef>

namespace rookery::coord {

/// How often nodes send heartbeats, for a swarm of `online` nodes. Each heartbeat costs
/// the coordinator a TLS record in, one out and a record update: at 10,000 nodes and
/// one a second, bench_coordinator measured 104% of a core on heartbeats alone, and
/// their round trip's p99 at 910 ms. So the interval grows with the swarm, to keep the
/// coordinator near `budgetPerSecond` heartbeats a second in all:
/// max(`base`, online / budget), rounded up to a whole half second so that a swarm
/// that grows by a few nodes does not retell everyone, and at most 20 s (links time out
/// after 30 s of silence; nodes keep to at most 30 s).
/// `budgetPerSecond` 0 keeps `base` at any size.
std::chrono::milliseconds heartbeatPace(std::chrono::milliseconds base, size_t online, double budgetPerSecond);

/// How long a node told `interval` may stay silent before it counts as lost: `timeout`,
/// or three intervals where that is longer (two missed heartbeats are not a loss).
std::chrono::milliseconds silenceLimit(std::chrono::milliseconds timeout, std::chrono::milliseconds interval);

} // namespace rookery::coord
