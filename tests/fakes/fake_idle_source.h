// SPDX-License-Identifier: GPL-3.0-or-later
// An idle source the test sets by hand.
#pragma once

#include <mutex>

#include "engine/device/idle_source.h"

namespace rookery::test {

class FakeIdleSource final : public device::IdleSource
{
public:
    std::optional<std::chrono::milliseconds> idleTime() override
    {
        std::lock_guard lock(m_mutex);
        return m_idle;
    }
    std::string name() const override { return "fake idle source"; }

    /// nullopt: the source cannot tell right now.
    void set(std::optional<std::chrono::milliseconds> idle)
    {
        std::lock_guard lock(m_mutex);
        m_idle = idle;
    }

private:
    std::mutex m_mutex;
    std::optional<std::chrono::milliseconds> m_idle = std::chrono::milliseconds(0);
};

} // namespace rookery::test
