// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/control/control_host.h"

#include <system_error>

#include "engine/common/paths.h"
#include "engine/control/control_files.h"

namespace rookery::control {

ControlHost::ControlHost(const std::filesystem::path &dataDir, int port, host::EngineApi &engine,
                         EngineControlOptions options)
    : m_dataDir(dataDir)
    , m_token(newToken())
    , m_control(engine, std::move(options))
{
    ensurePrivateDirectory(dataDir);
    ControlServerConfig c;
    c.port = uint16_t(port);
    c.token = m_token;
    c.openPaths = {"/metrics"};
    m_server = std::make_unique<ControlServer>(c, [this](const ControlRequest &r) { return m_control.handle(r); });
    // The token first: a client that finds the port finds a token that works with it.
    writePrivateFile(dataDir / kTokenFileName, m_token + "\n");
    writePrivateFile(dataDir / kPortFileName, std::to_string(m_server->port()) + "\n");
}

ControlHost::~ControlHost()
{
    m_server->stop();
    try {
        if (readToken(m_dataDir / kTokenFileName) != m_token)
            return; // another node on this data directory took over
    } catch (const std::exception &) {
        return;
    }
    std::error_code ignored;
    std::filesystem::remove(m_dataDir / kPortFileName, ignored);
    std::filesystem::remove(m_dataDir / kTokenFileName, ignored);
}

} // namespace rookery::control
