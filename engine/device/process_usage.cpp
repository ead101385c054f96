// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/process_usage.h"

#include <fstream>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sched.h>
#include <time.h>
#include <unistd.h>

namespace rookery::device {

void keepResidentMemoryTight()
{
#if defined(__GLIBC__)
    ::mallopt(M_MMAP_THRESHOLD, 256 * 1024); // fixed: no longer raised as blocks are freed
    ::mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
    ::mallopt(M_ARENA_MAX, 2);
#endif
}

void keepFreedMemoryForReuse()
{
#if defined(__GLIBC__)
    ::mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024); // glibc's largest; fixed from here on
    ::mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
#endif
}

uint64_t residentBytes()
{
    std::ifstream in("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    if (!(in >> size >> resident))
        return 0;
    return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

std::chrono::nanoseconds processCpuTime()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

std::chrono::nanoseconds threadCpuTime()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

int allowedCores()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return std::max(1, CPU_COUNT(&set));
    return int(std::max(1u, std::thread::hardware_concurrency()));
}

} // namespace rookery::device
