// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/join_address.h"

#include <fstream>
#include <sstream>

#include "engine/common/error.h"
#include "engine/net/host_port.h"

namespace rookery::coord {

std::filesystem::path joinAddressPath(const std::filesystem::path &dataDir) { return dataDir / "join-address"; }

void writeJoinAddress(const std::filesystem::path &dataDir, const net::CoordinatorAddress &address)
{
    const auto path = joinAddressPath(dataDir);
    const auto temporary = std::filesystem::path(path.string() + ".new");
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << address.toString() << "\n";
        if (!out)
            throw Error("cannot write " + temporary.string());
    }
    std::error_code ec;
    std::filesystem::rename(temporary, path, ec);
    if (ec)
        throw Error("cannot write " + path.string() + ": " + ec.message());
}

std::string readJoinAddress(const std::filesystem::path &dataDir, const std::string &publicHost)
{
    const auto path = joinAddressPath(dataDir);
    std::ifstream in(path);
    if (!in)
        throw Error("no join string in " + dataDir.string() + ": start rookery-coordinator with --data-dir " +
                    dataDir.string() + " first (it writes " + path.filename().string() + " as it starts)");
    std::string text;
    std::getline(in, text);
    net::CoordinatorAddress address;
    try {
        address = net::CoordinatorAddress::parse(text);
    } catch (const Error &e) {
        throw Error(path.string() + " is damaged (" + e.what() + "): restart the coordinator to write it again");
    }
    if (!publicHost.empty())
        address.host = net::unbracketed(publicHost);
    return address.toString();
}

} // namespace rookery::coord
