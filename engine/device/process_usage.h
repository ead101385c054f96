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

/// The opposite, for a node without a memory cap: blocks under 32 MiB come from the
/// allocator's arenas and up to 64 MiB freed stays in each, so that the buffers of
/// every averaging round (the weights flattened, a working copy, the chunks sent and
/// received: megabytes each, made and freed every round) reuse pages already mapped
/// instead of taking a page fault per 4 KiB. Measured on the MLP's 2x1 swarm on this
/// machine: a round of 2.7 MB took 29-33 ms, of which flattening alone 3-5 ms; with
/// this, 11-14 ms, and each node trained 12.0-14.1k samples/s instead of 8.2k. Costs
/// up to 64 MiB of resident memory per arena that a cap would count, hence not under
/// one. The thresholds are the whole process's, so any time will do; best before
/// training starts. No effect without glibc.
void keepFreedMemoryForReuse();

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
