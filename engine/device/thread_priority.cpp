// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/thread_priority.h"

#include <cstdlib>
#include <filesystem>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rookery::device {
namespace {

pid_t currentThreadId() { return pid_t(::syscall(SYS_gettid)); }

bool lower(pid_t tid) { return ::setpriority(PRIO_PROCESS, id_t(tid), kComputeNice) == 0; }

} // namespace

bool lowerCallingThreadPriority() { return lower(currentThreadId()); }

int lowerOtherThreadsPriority()
{
    const pid_t self = currentThreadId();
    int lowered = 0;
    std::error_code ec;
    for (const auto &entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        const auto tid = pid_t(std::strtol(entry.path().filename().c_str(), nullptr, 10));
        if (tid > 0 && tid != self && lower(tid))
            ++lowered;
    }
    return lowered;
}

} // namespace rookery::device
