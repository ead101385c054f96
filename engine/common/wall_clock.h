// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace rookery {

/// Milliseconds since the Unix epoch by the system clock: the wall-clock time stamps the
/// database, the wire and the UI exchange (registrations, checkpoints, events). It can
/// jump when the clock is set; measure durations with std::chrono::steady_clock.
///
/// Thread safety: may be called from any thread.
int64_t nowMs();

} // namespace rookery
