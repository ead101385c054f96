// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>

namespace rookery::device {

/// This process's resident memory (RSS) in bytes, from /proc/self/statm; 0 if unreadable.
///
/// Thread safety: may be called from any thread.
uint64_t residentBytes();

/// Makes freed memory leave the process at once, so that its resident memory follows
/// what it holds: with glibc, blocks from 256 KiB up are mapped and unmapped one by one
/// (the allocator otherwise raises that threshold to 32 MiB as it sees blocks freed,
/// and keeps what they leave), and two arenas at most. Measured on the vision
/// transformer's three stages: 60-80 MiB less each, the last stage within 3% of its
/// weights, gradients, optimizer state and published copy. Costs a mapping and its page
/// faults per large allocation (some per cent of a small model's speed), so a node does
/// this only under a memory cap. Call early, before other threads allocate. No effect
/// without glibc.
void keepResidentMemoryTight();

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
