// SPDX-License-Identifier: GPL-3.0-or-later
// The result of an EngineApi command, which arrives on the engine's thread: a callback
// to pass, and a wait that keeps Qt's events flowing.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/host/engine_api.h"
#include "tests/support/test_support.h"

namespace rookery::test {

/// The callback shares its state with this object, so a result that arrives after a
/// wait gave up (and this object is gone) writes nowhere harmful.
class CommandResult
{
public:
    host::EngineApi::ResultCallback callback()
    {
        return [state = m_state](const std::string &error) {
            std::lock_guard lock(state->mutex);
            state->error = error;
        };
    }
    bool arrived() const
    {
        std::lock_guard lock(m_state->mutex);
        return m_state->error.has_value();
    }
    /// "" for success, the engine's sentence for a failure, "no result" after `timeout`.
    std::string wait(std::chrono::milliseconds timeout)
    {
        if (!waitFor([this] { return arrived(); }, timeout))
            return "no result";
        std::lock_guard lock(m_state->mutex);
        return *m_state->error;
    }

private:
    struct State
    {
        std::mutex mutex;
        std::optional<std::string> error;
    };
    std::shared_ptr<State> m_state = std::make_shared<State>();
};

} // namespace rookery::test
