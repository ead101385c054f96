// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "engine/control/control_server.h"
#include "engine/control/engine_control.h"

namespace rookery::control {

/// A node's local control API for as long as it lives: the routes over its engine
/// (EngineControl), the server on 127.0.0.1, and the port and token files in the data
/// directory, which it removes again when it goes, unless another node has replaced
/// them in the meantime.
///
/// Thread safety: construct and destroy on one thread; the engine must outlive it.
class ControlHost
{
public:
    /// Serves on `port` (0: any free port). Throws rookery::Error when it cannot bind or
    /// write its files.
    ControlHost(const std::filesystem::path &dataDir, int port, host::EngineApi &engine,
                EngineControlOptions options = {});
    ~ControlHost();
    ControlHost(const ControlHost &) = delete;
    ControlHost &operator=(const ControlHost &) = delete;

    uint16_t port() const { return m_server->port(); }

private:
    std::filesystem::path m_dataDir;
    std::string m_token;
    EngineControl m_control;
    std::unique_ptr<ControlServer> m_server;
};

} // namespace rookery::control
