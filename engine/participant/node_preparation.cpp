// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/node_preparation.h"

#include <filesystem>
#include <fstream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/paths.h"
#include "engine/device/profile_service.h"
#include "engine/net/nickname.h"

namespace rookery::participant {
namespace {

// A free TCP port on `host` for the peer listener: the coordinator must learn the
// address at registration, before the listener (which needs the certificate that
// registration brings) exists. `preferred` first, when it is free.
uint16_t freePort(const std::string &host, uint16_t preferred)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        throw Error("cannot open a socket to find a free port");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    if (::inet_pton(AF_INET, host == "0.0.0.0" ? "0.0.0.0" : host.c_str(), &addr.sin_addr) != 1) {
        ::close(fd);
        throw Error("--bind '" + host + "' is not an IPv4 address");
    }
    socklen_t len = sizeof addr;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); // as the listener will
    addr.sin_port = htons(preferred);
    bool bound = preferred != 0 && ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    if (!bound) {
        addr.sin_port = 0;
        bound = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    }
    const bool ok = bound && ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0;
    ::close(fd);
    if (!ok)
        throw Error("cannot bind to " + host + " to find a free port for peers");
    return ntohs(addr.sin_port);
}

// A port number kept in a file of the data directory; 0 when missing or unreadable.
uint64_t readSmallNumber(const std::filesystem::path &path)
{
    std::ifstream in(path);
    uint64_t value = 0;
    if (!(in >> value) || value > 65535)
        return 0;
    return value;
}

void writeSmallNumber(const std::filesystem::path &path, uint64_t value)
{
    std::ofstream out(path, std::ios::trunc);
    out << value << "\n";
    if (!out)
        log::warning("node", "cannot write " + path.string() + "; a restart will listen on another port");
}

} // namespace

PreparedNode prepareSwarmNode(SwarmNodeSettings &s)
{
    auto address = net::CoordinatorAddress::parse(s.coordinator);
    ensurePrivateDirectory(s.dataDir);
    auto identity = net::Identity::loadOrCreate(s.dataDir);
    auto train = std::make_shared<data::ImageDataset>(data::loadFashionMnist(s.datasetDir, data::Split::Train));
    auto test = std::make_shared<data::ImageDataset>(data::loadFashionMnist(s.datasetDir, data::Split::Test));
    auto checkpoints = std::make_unique<store::CheckpointStore>(s.dataDir / "rookery.db");
    const auto profile = device::loadCapabilityProfile(s.dataDir, false);
    // Without --port, the port of the last run when it is still free: a node that
    // restarts keeps its address, so its neighbours' links simply reconnect.
    const auto portFile = s.dataDir / "peer-port";
    const uint16_t port = s.port ? s.port : freePort(s.bindAddress, uint16_t(readSmallNumber(portFile)));
    if (!s.port)
        writeSmallNumber(portFile, port);
    if (s.name.empty())
        s.name = net::nicknameFor(identity.nodeId()); // never the host name: it often names the owner
    return PreparedNode{std::move(address),
                        std::move(identity),
                        std::move(train),
                        std::move(test),
                        std::move(checkpoints),
                        device::toJson(profile.profile),
                        port};
}

} // namespace rookery::participant
