// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>

namespace rookery::device {

/// This process's resident memory (RSS) in bytes, from /proc/self/statm; 0 if unreadable.
///
/// Thread safety: may be called from any thread.
uint64_t residentBytes();

/// CPU time used so far by all threads of this process (CLOCK_PROCESS_CPUTIME_ID).
///
/// Thread safety: may be called from any thread.
std::chrono::nanoseconds processCpuTime();

/// CPU time used so far by the calling thread (CLOCK_THREAD_CPUTIME_ID): unlike wall
/// time, it does not grow while other processes have the cores.
///
/// Thread safety: may be called from any thread; it measures that thread.
std::chrono::nanoseconds threadCpuTime();

/// Cores this process may run on (its CPU affinity mask), at least 1.
int allowedCores();

} // namespace rookery::device
