// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/profile_probe.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <dlfcn.h>

#include <torch/torch.h>

#include "engine/common/wall_clock.h"
#include "engine/device/compute_threads.h"
#include "engine/device/hardware_info.h"
#include "engine/device/process_usage.h"

namespace fs = std::filesystem;

namespace rookery::device {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void synchronize(const torch::Device &device)
{
    if (device.is_cuda())
        torch::cuda::synchronize(device.index());
}

// fp32 n x n matrix multiplies for `budget` after one warm-up; 2n^3 FLOPs each.
double measureGflops(const torch::Device &device, int64_t n, std::chrono::milliseconds budget)
{
    torch::NoGradGuard noGrad;
    const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    const torch::Tensor a = torch::rand({n, n}, options);
    const torch::Tensor b = torch::rand({n, n}, options);
    torch::Tensor c = torch::mm(a, b);
    synchronize(device);
    int64_t multiplies = 0;
    const auto start = Clock::now();
    do {
        torch::mm_out(c, a, b);
        ++multiplies;
        synchronize(device);
    } while (Clock::now() - start < budget);
    return 2.0 * double(n) * double(n) * double(n) * double(multiplies) / secondsSince(start) / 1e9;
}

// Best of repeated copies of `bytes`; counts bytes read plus bytes written.
double measureCopyBandwidth(uint64_t bytes, std::chrono::milliseconds budget)
{
    std::vector<char> from(bytes, 1), to(bytes, 0); // touched now, so page faults stay out of the timing
    double best = 0;
    const auto start = Clock::now();
    do {
        const auto t = Clock::now();
        std::memcpy(to.data(), from.data(), bytes);
        best = std::max(best, 2.0 * double(bytes) / secondsSince(t));
        from[size_t(best) % bytes] ^= to[0]; // keep the copy from being optimised away
    } while (Clock::now() - start < budget);
    return best;
}

// CUDA device names and memory from the driver API, loaded at run time: Debian's
// LibTorch has no CUDA headers to ask it, and a machine without a GPU has no driver.
GpuInfo cudaDeviceInfo(int index)
{
    GpuInfo info{"CUDA device " + std::to_string(index), 0, 0};
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return info;
    using Init = int (*)(unsigned);
    using Get = int (*)(int *, int);
    using Name = int (*)(char *, int, int);
    using Memory = int (*)(size_t *, int);
    const auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
    const auto get = reinterpret_cast<Get>(dlsym(lib, "cuDeviceGet"));
    const auto name = reinterpret_cast<Name>(dlsym(lib, "cuDeviceGetName"));
    const auto memory = reinterpret_cast<Memory>(dlsym(lib, "cuDeviceTotalMem_v2"));
    int device = 0;
    if (init && get && name && memory && init(0) == 0 && get(&device, index) == 0) {
        char text[256] = {};
        if (name(text, sizeof text - 1, device) == 0)
            info.name = text;
        size_t total = 0;
        if (memory(&total, device) == 0)
            info.memoryBytes = total;
    }
    dlclose(lib);
    return info;
}

std::vector<GpuInfo> cudaDevices()
{
    std::vector<GpuInfo> gpus;
    if (!torch::cuda::is_available()) // always so with Debian's CPU-only LibTorch
        return gpus;
    for (size_t i = 0; i < torch::cuda::device_count(); ++i)
        gpus.push_back(cudaDeviceInfo(int(i)));
    return gpus;
}

} // namespace

CapabilityProfile readHardwareProfile(const fs::path &dataDir)
{
    const HardwareInfo hw = readHardwareInfo();
    CapabilityProfile p;
    p.cpuModel = hw.cpuModel;
    p.physicalCores = hw.physicalCores;
    p.logicalCores = hw.logicalCores;
    p.allowedCores = allowedCores();
    p.ramTotalBytes = hw.ramTotalBytes;
    p.ramAvailableBytes = hw.ramAvailableBytes;
    p.dataDir = dataDir.string();
    std::error_code ec;
    const auto space = fs::space(dataDir, ec);
    p.diskFreeBytes = ec ? 0 : space.available;
    p.gpus = cudaDevices();
    p.blas = blasDescription();
    return p;
}

CapabilityProfile measureCapabilityProfile(const fs::path &dataDir, const ProfileOptions &options)
{
    const auto start = Clock::now();
    CapabilityProfile p = readHardwareProfile(dataDir);
    const ThreadConfig before = currentThreadConfig();
    const torch::Device cpu(torch::kCPU);
    applyThreadConfig({1, 1});
    p.gflopsOneThread = measureGflops(cpu, options.matrixSize, options.perMeasurement);
    applyThreadConfig(defaultThreadConfig(p.allowedCores));
    p.gflopsAllThreads = measureGflops(cpu, options.matrixSize, options.perMeasurement);
    applyThreadConfig({before.torchThreads, before.blasThreads > 0 ? before.blasThreads : p.allowedCores});

    // A copy far larger than the caches, but never more than an eighth of free memory.
    const uint64_t copy =
        std::max<uint64_t>(uint64_t(1) << 20, std::min<uint64_t>(options.copyBytes, p.ramAvailableBytes / 16));
    p.memoryBandwidthBytesPerSecond = measureCopyBandwidth(copy, options.perMeasurement);

    for (size_t i = 0; i < p.gpus.size(); ++i)
        p.gpus[i].gflops =
            measureGflops(torch::Device(torch::kCUDA, torch::DeviceIndex(i)), 4096, options.perMeasurement);
    p.measuredAtMs = nowMs();
    p.measureSeconds = secondsSince(start);
    return p;
}

} // namespace rookery::device
