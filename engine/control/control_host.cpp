// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/node/control_host.h"

#include <system_error>

#include "engine/common/paths.h"
#include "engine/control/control_files.h"

namespace rookery::app {

ControlHost::ControlHost(const std::filesystem::path &dataDir, int port, const std::string &mode,
                         std::function<void()> requestStop)
    : m_dataDir(dataDir)
    , m_token(control::newToken())
    , m_state(mode, std::move(requestStop))
{
    ensurePrivateDirectory(dataDir);
    control::ControlServerConfig c;
    c.port = uint16_t(port);
    c.token = m_token;
    c.openPaths = {"/metrics"};
    m_server = std::make_unique<control::ControlServer>(
        c, [this](const control::ControlRequest &r) { return m_state.handle(r); });
    // The token first: a client that finds the port finds a token that works with it.
    writePrivateFile(dataDir / control::kTokenFileName, m_token + "\n");
    writePrivateFile(dataDir / control::kPortFileName, std::to_string(m_server->port()) + "\n");
}

ControlHost::~ControlHost()
{
    m_server->stop();
    try {
        if (control::readToken(m_dataDir / control::kTokenFileName) != m_token)
            return; // another node on this data directory took over
    } catch (const std::exception &) {
        return;
    }
    std::error_code ignored;
    std::filesystem::remove(m_dataDir / control::kPortFileName, ignored);
    std::filesystem::remove(m_dataDir / control::kTokenFileName, ignored);
}

} // namespace rookery::app
