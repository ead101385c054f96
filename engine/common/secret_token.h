// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace rookery {

/// 32 random bytes from OpenSSL's CSPRNG, as 64 hex digits: a node's control token, a
/// coordinator's operator token. Throws rookery::Error when the generator fails.
std::string newToken();

/// The token in `file` (surrounding white space trimmed). Throws rookery::Error when it
/// cannot be read, is empty, or other users may read it (then it is no secret).
std::string readToken(const std::filesystem::path &file);

/// Lowercase hex SHA-256 of `text`: how a token is kept at rest (a join token in the
/// coordinator's database), so that reading the file does not give the token away, and
/// the name of a dataset's shard or manifest (engine/data). Throws rookery::Error when
/// OpenSSL fails.
std::string sha256Hex(std::string_view text);

/// Compares in time independent of where the strings differ.
bool sameToken(std::string_view a, std::string_view b);

} // namespace rookery
