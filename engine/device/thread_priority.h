// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace rookery::device {

/// The nice value of compute: the lowest, as BOINC runs science applications. Compute
/// still takes every idle cycle, but the desktop's own threads (the UI thread above all)
/// and other programs get a core first when they want one.
inline constexpr int kComputeNice = 19;

/// Lowers the calling thread to kComputeNice. Linux keeps a nice value per thread and
/// new threads inherit their creator's, so a thread that calls this before it starts
/// others (torch's OpenMP pool, stage threads, the network thread) lowers them too.
/// Returns false when the kernel refused; irreversible without privileges.
///
/// Thread safety: affects only the calling thread.
bool lowerCallingThreadPriority();

/// Lowers every other thread of this process to kComputeNice and returns how many.
/// For threads that libraries start when they load, before main() runs: OpenBLAS
/// starts its workers from the main thread then, so they inherit its priority. Call it
/// early in main(), before the UI starts threads of its own.
///
/// Thread safety: may be called from any thread; reads /proc/self/task.
int lowerOtherThreadsPriority();

} // namespace rookery::device
