// SPDX-License-Identifier: GPL-3.0-or-later
// The result of an EngineApi command, which arrives on the engine's thread: a callback
// to pass, and a wait that keeps Qt's events flowing.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "engine/node/engine_api.h"
#include "tests/support/test_support.h"

namespace rookery::test {

class CommandResult
{
public:
    node::EngineApi::ResultCallback callback()
    {
        return [this](const std::string &error) {
            std::lock_guard lock(m_mutex);
            m_error = error;
        };
    }
    bool arrived() const
    {
        std::lock_guard lock(m_mutex);
        return m_error.has_value();
    }
    /// "" for success, the engine's sentence for a failure, "no result" after `timeout`.
    std::string wait(std::chrono::milliseconds timeout)
    {
        if (!waitFor([this] { return arrived(); }, timeout))
            return "no result";
        std::lock_guard lock(m_mutex);
        return *m_error;
    }

private:
    mutable std::mutex m_mutex;
    std::optional<std::string> m_error;
};

} // namespace rookery::test
