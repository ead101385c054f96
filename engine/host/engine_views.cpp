// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/engine_views.h"

#include <cstdio>

#include "engine/common/format.h"
#include "engine/device/capability_profile.h"
#include "engine/device/governor.h"
#include "engine/model/model_spec.h"
#include "engine/store/checkpoint_store.h"

namespace rookery::host {

DeviceView deviceView(const device::CapabilityProfile &p, bool measured)
{
    DeviceView d;
    d.measured = measured;
    d.cpuModel = p.cpuModel;
    d.physicalCores = p.physicalCores;
    d.logicalCores = p.logicalCores;
    d.ramTotalBytes = int64_t(p.ramTotalBytes);
    d.ramAvailableBytes = int64_t(p.ramAvailableBytes);
    d.gflopsOneThread = p.gflopsOneThread;
    d.gflopsAllThreads = p.gflopsAllThreads;
    d.memoryBandwidthGBs = p.memoryBandwidthBytesPerSecond / 1e9;
    d.diskFreeBytes = int64_t(p.diskFreeBytes);
    for (const auto &gpu : p.gpus) {
        char text[64];
        std::snprintf(text, sizeof text, ", %.0f GFLOP/s", gpu.gflops);
        d.gpus.push_back(gpu.name + ", " + format::bytes(double(gpu.memoryBytes)) + (gpu.gflops > 0 ? text : ""));
    }
    d.measuredAtMs = p.measuredAtMs;
    return d;
}

CheckpointView checkpointView(const store::CheckpointInfo &info)
{
    return {info.id, info.run, info.step, info.createdAtMs, info.modelName, info.bytes};
}

std::vector<std::string> layerNames(const model::ModelSpec &spec, size_t first, size_t last)
{
    if (last == 0 || last > spec.layers.size())
        last = spec.layers.size();
    std::vector<std::string> names;
    for (size_t i = first; i < last; ++i)
        names.push_back(spec.layers[i].describe());
    return names;
}

std::string stageRole(int stage, int stages)
{
    if (stages <= 1)
        return "whole model";
    return stage == 0 ? "root" : stage + 1 == stages ? "leaf" : "middle";
}

} // namespace rookery::host
