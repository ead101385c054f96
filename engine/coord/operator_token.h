// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>

namespace rookery::coord {

/// The operator token, which the full status view needs, lives in DIR/operator-token,
/// mode 0600: whoever may read the coordinator's data directory is its operator.
std::filesystem::path operatorTokenPath(const std::filesystem::path &dataDir);

/// The token in that file, made (64 hex digits) when there is none yet. Throws
/// rookery::Error when it cannot be read or written, or others may read it.
std::string loadOrCreateOperatorToken(const std::filesystem::path &dataDir);

} // namespace rookery::coord
