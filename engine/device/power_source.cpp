// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/power_source.h"

#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace rookery::device {
namespace {

// The first line of a sysfs attribute; empty when it cannot be read.
std::string attribute(const fs::path &dir, const char *name)
{
    std::ifstream in(dir / name);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r'))
        line.pop_back();
    return line;
}

} // namespace

SysfsPowerSource::SysfsPowerSource(fs::path root)
    : m_root(std::move(root))
{ }

PowerState SysfsPowerSource::read()
{
    PowerState state;
    bool acOnline = false;
    bool discharging = false;
    int percentSum = 0, percentCount = 0;
    std::error_code ec;
    for (fs::directory_iterator it(m_root, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path dir = it->path();
        const std::string type = attribute(dir, "type");
        if (type == "Mains" || type == "USB") {
            acOnline = acOnline || attribute(dir, "online") == "1";
        } else if (type == "Battery" && attribute(dir, "scope") != "Device") {
            state.hasBattery = true;
            discharging = discharging || attribute(dir, "status") == "Discharging";
            try {
                const int percent = std::stoi(attribute(dir, "capacity"));
                if (percent >= 0 && percent <= 100) {
                    percentSum += percent;
                    ++percentCount;
                }
            } catch (const std::exception &) {
                // no capacity file, or garbage in it: report no percentage
            }
        }
    }
    state.onBattery = state.hasBattery && discharging && !acOnline;
    if (percentCount > 0)
        state.batteryPercent = percentSum / percentCount;
    return state;
}

} // namespace rookery::device
