// SPDX-License-Identifier: GPL-3.0-or-later
// CapabilityProfile <-> JSON and text. Kept apart so only this file pays for nlohmann/json.
#include "engine/device/capability_profile.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/format.h"

namespace rookery::device {
namespace {

using nlohmann::json;

std::string gflops(double value)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", value);
    return buf;
}

std::string localTime(int64_t ms)
{
    const std::time_t t = std::time_t(ms / 1000);
    std::tm local{};
    localtime_r(&t, &local);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &local);
    return buf;
}

} // namespace

std::string hardwareKey(const CapabilityProfile &p)
{
    const auto gib = std::llround(double(p.ramTotalBytes) / double(uint64_t(1) << 30));
    std::string key = "cpu=" + p.cpuModel + ";cores=" + std::to_string(p.physicalCores) + "/" +
                      std::to_string(p.logicalCores) + ";ram=" + std::to_string(gib) + "GiB;gpus=";
    for (size_t i = 0; i < p.gpus.size(); ++i)
        key += (i ? "," : "") + p.gpus[i].name;
    return key;
}

std::string toJson(const CapabilityProfile &p)
{
    json gpus = json::array();
    for (const auto &g : p.gpus)
        gpus.push_back({{"name", g.name}, {"memory_bytes", g.memoryBytes}, {"gflops", g.gflops}});
    const json j = {{"cpu_model", p.cpuModel},
                    {"physical_cores", p.physicalCores},
                    {"logical_cores", p.logicalCores},
                    {"allowed_cores", p.allowedCores},
                    {"ram_total_bytes", p.ramTotalBytes},
                    {"ram_available_bytes", p.ramAvailableBytes},
                    {"gflops_one_thread", p.gflopsOneThread},
                    {"gflops_all_threads", p.gflopsAllThreads},
                    {"memory_bandwidth_bytes_per_second", p.memoryBandwidthBytesPerSecond},
                    {"data_dir", p.dataDir},
                    {"disk_free_bytes", p.diskFreeBytes},
                    {"gpus", gpus},
                    {"blas", p.blas},
                    {"measured_at_ms", p.measuredAtMs},
                    {"measure_seconds", p.measureSeconds},
                    {"hardware_key", hardwareKey(p)}};
    return j.dump();
}

CapabilityProfile capabilityProfileFromJson(std::string_view text)
{
    CapabilityProfile p;
    try {
        const json j = json::parse(text);
        p.cpuModel = j.at("cpu_model").get<std::string>();
        p.physicalCores = j.at("physical_cores").get<int>();
        p.logicalCores = j.at("logical_cores").get<int>();
        p.allowedCores = j.at("allowed_cores").get<int>();
        p.ramTotalBytes = j.at("ram_total_bytes").get<uint64_t>();
        p.ramAvailableBytes = j.at("ram_available_bytes").get<uint64_t>();
        p.gflopsOneThread = j.at("gflops_one_thread").get<double>();
        p.gflopsAllThreads = j.at("gflops_all_threads").get<double>();
        p.memoryBandwidthBytesPerSecond = j.at("memory_bandwidth_bytes_per_second").get<double>();
        p.dataDir = j.at("data_dir").get<std::string>();
        p.diskFreeBytes = j.at("disk_free_bytes").get<uint64_t>();
        for (const auto &g : j.at("gpus"))
            p.gpus.push_back(
                {g.at("name").get<std::string>(), g.at("memory_bytes").get<uint64_t>(), g.at("gflops").get<double>()});
        p.blas = j.value("blas", std::string());
        p.measuredAtMs = j.at("measured_at_ms").get<int64_t>();
        p.measureSeconds = j.value("measure_seconds", 0.0);
    } catch (const json::exception &e) {
        throw Error(std::string("capability profile is not valid JSON of the expected form: ") + e.what());
    }
    return p;
}

std::string describe(const CapabilityProfile &p)
{
    std::string s;
    const auto line = [&s](const std::string &label, const std::string &value) {
        char buf[24];
        std::snprintf(buf, sizeof buf, "%-11s", label.c_str());
        s += buf + value + "\n";
    };
    line("CPU", p.cpuModel + " (" + std::to_string(p.physicalCores) + " cores, " + std::to_string(p.logicalCores) +
                    " threads, " + std::to_string(p.allowedCores) + " allowed)");
    line("RAM", format::bytes(double(p.ramTotalBytes)) + " total, " + format::bytes(double(p.ramAvailableBytes)) +
                    " available");
    line("fp32 GEMM", gflops(p.gflopsOneThread) + " on 1 thread, " + gflops(p.gflopsAllThreads) + " on " +
                          std::to_string(p.allowedCores) + " cores");
    line("memory", format::bytes(p.memoryBandwidthBytesPerSecond) + "/s (copy, read + write)");
    line("disk", format::bytes(double(p.diskFreeBytes)) + " free in " + p.dataDir);
    if (p.gpus.empty())
        line("GPU", "none that LibTorch can use");
    for (const auto &g : p.gpus)
        line("GPU", g.name + ", " + format::bytes(double(g.memoryBytes)) + ", " + gflops(g.gflops));
    line("BLAS", p.blas);
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", p.measureSeconds);
    line("measured", localTime(p.measuredAtMs) + " in " + took);
    return s;
}

} // namespace rookery::device
