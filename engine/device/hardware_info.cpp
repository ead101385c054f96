// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/hardware_info.h"

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace rookery::device {
namespace {

std::string readAll(const std::filesystem::path &path)
{
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// "key\t: value" -> (key, value), both trimmed.
std::pair<std::string, std::string> splitField(const std::string &line)
{
    const auto colon = line.find(':');
    if (colon == std::string::npos)
        return {};
    auto trim = [](std::string s) {
        const auto first = s.find_first_not_of(" \t");
        const auto last = s.find_last_not_of(" \t");
        return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
    };
    return {trim(line.substr(0, colon)), trim(line.substr(colon + 1))};
}

} // namespace

void parseCpuInfo(std::string_view text, HardwareInfo &info)
{
    std::istringstream in{std::string(text)};
    std::set<std::pair<std::string, std::string>> cores;
    std::string physical, line;
    int processors = 0;
    while (std::getline(in, line)) {
        const auto [key, value] = splitField(line);
        if (key == "processor")
            ++processors;
        else if ((key == "model name" || key == "Model" || key == "cpu model") && info.cpuModel.empty())
            info.cpuModel = value;
        else if (key == "physical id")
            physical = value;
        else if (key == "core id")
            cores.insert({physical, value});
    }
    info.logicalCores = processors;
    info.physicalCores = cores.empty() ? processors : int(cores.size());
    if (info.cpuModel.empty())
        info.cpuModel = "unknown CPU";
}

void parseMemInfo(std::string_view text, HardwareInfo &info)
{
    std::istringstream in{std::string(text)};
    std::string line;
    while (std::getline(in, line)) {
        const auto [key, value] = splitField(line);
        uint64_t kib = 0;
        std::istringstream(value) >> kib;
        if (key == "MemTotal")
            info.ramTotalBytes = kib * 1024;
        else if (key == "MemAvailable")
            info.ramAvailableBytes = kib * 1024;
    }
}

HardwareInfo readHardwareInfo(const std::filesystem::path &procRoot)
{
    HardwareInfo info;
    parseCpuInfo(readAll(procRoot / "cpuinfo"), info);
    parseMemInfo(readAll(procRoot / "meminfo"), info);
    return info;
}

} // namespace rookery::device
