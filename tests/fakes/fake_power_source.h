// SPDX-License-Identifier: GPL-3.0-or-later
// A power supply the test plugs in and out by hand.
#pragma once

#include <mutex>

#include "engine/device/power_source.h"

namespace rookery::test {

class FakePowerSource final : public device::PowerSource
{
public:
    device::PowerState read() override
    {
        std::lock_guard lock(m_mutex);
        return m_state;
    }
    void onBattery(int percent)
    {
        std::lock_guard lock(m_mutex);
        m_state = {true, true, percent};
    }
    void onAc(int percent = 80)
    {
        std::lock_guard lock(m_mutex);
        m_state = {true, false, percent};
    }

private:
    std::mutex m_mutex;
    device::PowerState m_state{true, false, 80};
};

} // namespace rookery::test
