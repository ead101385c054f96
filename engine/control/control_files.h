// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "engine/common/secret_token.h"

namespace rookery::control {

/// In a node's data directory while its control API listens: the port, and the token a
/// client must present. Both mode 0600 (writePrivateFile, engine/common/paths.h), so
/// only the node's own user can read them.
inline constexpr std::string_view kPortFileName = "control-port";
inline constexpr std::string_view kTokenFileName = "control-token";

/// Where a client finds a node's control API.
struct ControlEndpoint
{
    uint16_t port = 0;
    std::string token;
};

using rookery::newToken;  // engine/common/secret_token.h
using rookery::readToken; // the token in a file only its owner may read
using rookery::sameToken;

/// The port and token a node in `dataDir` wrote. Throws rookery::Error saying which
/// file is missing or unreadable, and so that no node seems to run there.
ControlEndpoint readControlEndpoint(const std::filesystem::path &dataDir);

} // namespace rookery::control
