// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "engine/control/control_server.h"
#include "engine/control/node_control.h"

namespace rookery::app {

/// rookery-node's local control API for the length of a run: the routes
/// (control::NodeControl), the server on 127.0.0.1, and the port and token files in
/// the data directory, which it removes again when it goes, unless another node has
/// replaced them in the meantime.
class ControlHost
{
public:
    /// Serves on `port` (0: any free port). `requestStop` is called for POST /v1/stop.
    /// Throws rookery::Error when it cannot bind or write its files.
    ControlHost(const std::filesystem::path &dataDir, int port, const std::string &mode,
                std::function<void()> requestStop);
    ~ControlHost();

    control::NodeControl &state() { return m_state; }
    uint16_t port() const { return m_server->port(); }

private:
    std::filesystem::path m_dataDir;
    std::string m_token;
    control::NodeControl m_state;
    std::unique_ptr<control::ControlServer> m_server;
};

} // namespace rookery::app
