// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/node_preparation.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <boost/asio/io_context.hpp>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/log.h"
#include "engine/common/paths.h"
#include "engine/device/offered_capacity.h"
#include "engine/device/process_usage.h"
#include "engine/device/profile_service.h"
#include "engine/net/host_port.h"
#include "engine/net/nickname.h"
#include "engine/net/tcp_listen.h"
#include "engine/participant/testing_misbehaviour.h"

namespace rookery::participant {
namespace {

// A free TCP port on `host` for the peer listener: the coordinator must learn the
// address at registration, before the listener (which needs the certificate that
// registration brings) exists. `preferred` first, when it is free.
uint16_t freePort(const std::string &host, uint16_t preferred)
{
    boost::asio::io_context ioc;
    const auto address = net::bindAddress(host, "listen for peers"); // throws for a bad --bind
    if (preferred != 0) {
        boost::asio::ip::tcp::acceptor probe(ioc);
        try {
            return net::listenOn(probe, {address, preferred}, "listen for peers");
        } catch (const Error &) { // taken since the last run: any free port will do
        }
    }
    boost::asio::ip::tcp::acceptor probe(ioc);
    return net::listenOn(probe, {address, 0}, "listen for peers");
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

std::string advertisedAddress(const std::string &bindAddress, const std::string &publicAddress, uint16_t port)
{
    if (publicAddress.empty())
        return (net::isWildcardHost(bindAddress) ? std::string() : net::bracketed(bindAddress)) + ":" +
               std::to_string(port);
    const auto bad = [&](const std::string &why) {
        return Error("--public-address '" + publicAddress + "' " + why +
                     " (give a host name or IP address, optionally with :PORT)");
    };
    std::string host = publicAddress, portText;
    if (host.front() == '[') { // [v6] or [v6]:port
        const auto close = host.find(']');
        if (close == std::string::npos || (close + 1 < host.size() && host[close + 1] != ':'))
            throw bad("is not host or host:port");
        portText = close + 1 < host.size() ? host.substr(close + 2) : "";
        host = host.substr(0, close + 1);
    } else if (std::count(host.begin(), host.end(), ':') == 1) {
        portText = host.substr(host.find(':') + 1);
        host = host.substr(0, host.find(':'));
    } else if (host.find(':') != std::string::npos) {
        host = "[" + host + "]"; // a bare IPv6 address
    }
    if (host.empty() || host == "[]" || net::isWildcardHost(host))
        throw bad("has no host");
    for (char c : host)
        if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '#' || c == '@' || c == '?')
            throw bad("has a character no host name has");
    if (!publicAddress.empty() && publicAddress.back() == ':')
        throw bad("has an empty port");
    if (!portText.empty()) {
        unsigned value = 0;
        for (char c : portText) {
            if (c < '0' || c > '9' || value > 65535)
                throw bad("has a bad port '" + portText + "'");
            value = value * 10 + unsigned(c - '0');
        }
        if (value < 1 || value > 65535)
            throw bad("has a port outside 1-65535");
        return host + ":" + portText;
    }
    return host + ":" + std::to_string(port);
}

PreparedNode prepareSwarmNode(SwarmNodeSettings &s)
{
    auto address = net::CoordinatorAddress::parse(s.coordinator);
    ensurePrivateDirectory(s.dataDir);
    auto identity = net::Identity::loadOrCreate(s.dataDir);
    // A copy of Fashion-MNIST of its own, when it has one; else a root stage fetches the
    // run's dataset from the coordinator (DatasetFetcher).
    std::shared_ptr<const data::ImageDataset> train, test;
    if (std::filesystem::exists(s.datasetDir / "train-images-idx3-ubyte.gz")) {
        try {
            train = std::make_shared<data::ImageDataset>(data::loadFashionMnist(s.datasetDir, data::Split::Train));
            test = std::make_shared<data::ImageDataset>(data::loadFashionMnist(s.datasetDir, data::Split::Test));
        } catch (const Error &e) {
            train = test = nullptr;
            log::warning("node", std::string("not using the dataset copy: ") + e.what() +
                                     "; a root stage fetches the swarm's copy from the coordinator instead");
        }
    } else {
        log::info("node",
                  "no dataset at " + s.datasetDir.string() + ": a root stage fetches its shards from the coordinator");
    }
    auto checkpoints = std::make_unique<store::CheckpointStore>(s.dataDir / "rookery.db");
    if (s.governor.memoryCapMiB > 0)
        device::keepResidentMemoryTight(); // what the cap counts should be what training holds
    else
        device::keepFreedMemoryForReuse(); // averaging rounds reuse their buffers' pages
    const auto profile =
        device::loadCapabilityProfile(s.dataDir, false, uint64_t(std::max<int64_t>(0, s.governor.memoryCapMiB)) << 20);
    // Offered: the memory cap less what this process holds already (program, libraries,
    // the dataset just loaded), so the planner gives it no stage it would stop over.
    const uint64_t resident = device::residentBytes();
    const auto offered = device::offeredProfile(profile.profile, s.governor, resident);
    if (s.governor.memoryCapMiB > 0)
        log::info("node", "memory cap " + format::bytes(double(uint64_t(s.governor.memoryCapMiB) << 20)) +
                              ": this process holds " + format::bytes(double(resident)) + " already and keeps " +
                              format::bytes(double(device::kTrainingAllowanceBytes)) + " for training's own use, so " +
                              format::bytes(double(offered.ramAvailableBytes)) + " is offered for training");
    const auto &limits = device::offeredLimits(s.governor);
    if (limits.maxCores > 0 || limits.cpuPercent < 100) {
        const std::string cores = limits.maxCores == 1  ? "1 core"
                                  : limits.maxCores > 1 ? std::to_string(limits.maxCores) + " cores"
                                                        : "all cores";
        char text[200];
        std::snprintf(text, sizeof text, "CPU caps %s (%s, %lld%%): %.1f GFLOP/s offered of %.1f measured",
                      s.governor.runOnlyWhenIdle ? "while the computer is idle" : "while you use the computer",
                      cores.c_str(), (long long)limits.cpuPercent, offered.gflopsAllThreads,
                      profile.profile.gflopsAllThreads);
        log::info("node", text);
    }
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
                        claimedProfile(device::toJson(offered)),
                        profile.profile,
                        offered.gflopsAllThreads,
                        port,
                        advertisedAddress(s.bindAddress, s.publicAddress, port)};
}

} // namespace rookery::participant
