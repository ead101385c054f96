// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/compute_threads.h"

#include <algorithm>

#include <dlfcn.h>

#include <torch/torch.h>

namespace rookery::device {
namespace {

// LibTorch on Debian calls whichever libblas.so.3 the system alternative names, so the
// OpenBLAS controls are looked up at run time rather than linked.
template <typename Fn> Fn blasSymbol(const char *name) { return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name)); }

} // namespace

void applyThreadConfig(ThreadConfig config)
{
    at::set_num_threads(std::max(1, config.torchThreads));
    if (auto set = blasSymbol<void (*)(int)>("openblas_set_num_threads"))
        set(std::max(1, config.blasThreads));
}

ThreadConfig currentThreadConfig()
{
    const auto get = blasSymbol<int (*)()>("openblas_get_num_threads");
    return {at::get_num_threads(), get ? get() : 0};
}

std::string blasDescription()
{
    if (auto config = blasSymbol<char *(*)()>("openblas_get_config"))
        return config();
    return "unknown BLAS (not OpenBLAS; run installer/setup.sh)";
}

} // namespace rookery::device
