// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/control/control_files.h"

#include <charconv>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "engine/common/error.h"
#include "engine/common/paths.h"

namespace rookery::control {
namespace fs = std::filesystem;

namespace {

std::string trimmed(std::string text)
{
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return text.substr(first, last - first + 1);
}

} // namespace

std::string newToken()
{
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof bytes) != 1)
        throw Error("cannot make a control token: the random number generator failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string token;
    for (const unsigned char b : bytes) {
        token += kHex[b >> 4];
        token += kHex[b & 15];
    }
    return token;
}

std::string readToken(const fs::path &file)
{
    std::string token = trimmed(readPrivateFile(file));
    if (token.empty())
        throw Error(file.string() + " holds no token");
    return token;
}

ControlEndpoint readControlEndpoint(const fs::path &dataDir)
{
    const fs::path portFile = dataDir / kPortFileName;
    std::error_code ec;
    if (!fs::exists(portFile, ec))
        throw Error("no headless node serves its control API from " + dataDir.string() + " (there is no " +
                    portFile.string() + "); start rookery-node with that --data-dir, or give its port");
    ControlEndpoint e;
    const std::string text = trimmed(readPrivateFile(portFile));
    unsigned port = 0;
    const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (err != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535)
        throw Error(portFile.string() + " does not hold a port number");
    e.port = uint16_t(port);
    e.token = readToken(dataDir / kTokenFileName);
    return e;
}

bool sameToken(std::string_view a, std::string_view b)
{
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace rookery::control
