// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/control/control_files.h"

#include <charconv>

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

} // namespace rookery::control
