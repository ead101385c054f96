// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <optional>

namespace rookery::device {

/// What the power supply is doing right now.
struct PowerState
{
    bool hasBattery = false;           ///< a system battery (not a mouse's) is present
    bool onBattery = false;            ///< running from it: no AC online, battery discharging
    std::optional<int> batteryPercent; ///< mean charge of the system batteries
    bool operator==(const PowerState &) const = default;
};

/// Tells whether the machine runs on battery. A seam for the governor's battery rule.
///
/// Thread safety: the governor calls a source from one thread at a time.
class PowerSource
{
public:
    virtual ~PowerSource() = default;
    virtual PowerState read() = 0;
};

/// Reads Linux's power supply class: every entry of `root` (normally
/// /sys/class/power_supply) with a `type` file. "Mains" and "USB" supplies with
/// `online` = 1 mean AC power; a "Battery" whose `scope` is not "Device" (peripherals
/// report their own batteries) and whose `status` is "Discharging" means battery power
/// unless AC is online. A missing root reads as a machine without a battery.
class SysfsPowerSource final : public PowerSource
{
public:
    explicit SysfsPowerSource(std::filesystem::path root = "/sys/class/power_supply");
    PowerState read() override;

private:
    std::filesystem::path m_root;
};

} // namespace rookery::device
