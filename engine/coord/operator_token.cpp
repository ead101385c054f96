// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/operator_token.h"

#include "engine/common/paths.h"
#include "engine/common/secret_token.h"

namespace rookery::coord {

std::filesystem::path operatorTokenPath(const std::filesystem::path &dataDir) { return dataDir / "operator-token"; }

std::string loadOrCreateOperatorToken(const std::filesystem::path &dataDir)
{
    const auto path = operatorTokenPath(dataDir);
    std::error_code ec;
    if (std::filesystem::exists(path, ec))
        return readToken(path);
    std::string token = newToken();
    writePrivateFile(path, token + "\n");
    return token;
}

} // namespace rookery::coord
