// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

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

/// 32 random bytes from OpenSSL's CSPRNG, as 64 hex digits. Throws rookery::Error when
/// the generator fails.
std::string newToken();

/// The token in `file` (surrounding white space trimmed). Throws rookery::Error when it
/// cannot be read, is empty, or other users may read it (then it is no secret).
std::string readToken(const std::filesystem::path &file);

/// The port and token a node in `dataDir` wrote. Throws rookery::Error saying which
/// file is missing or unreadable, and so that no node seems to run there.
ControlEndpoint readControlEndpoint(const std::filesystem::path &dataDir);

/// Compares in time independent of where the strings differ.
bool sameToken(std::string_view a, std::string_view b);

} // namespace rookery::control
