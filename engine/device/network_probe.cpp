// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/network_probe.h"

#include <algorithm>
#include <array>
#include <thread>
#include <utility> // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it
#include <vector>

#include <boost/asio.hpp>

#include "engine/common/error.h"

namespace rookery::device {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxRequestBytes = uint64_t(1) << 30;
constexpr size_t kChunk = 64 * 1024;

struct Request
{
    char op = 0;
    uint64_t length = 0;
};

std::array<unsigned char, 9> encode(Request r)
{
    std::array<unsigned char, 9> bytes{};
    bytes[0] = static_cast<unsigned char>(r.op);
    for (int i = 0; i < 8; ++i)
        bytes[size_t(1 + i)] = static_cast<unsigned char>(r.length >> (8 * i));
    return bytes;
}

Request decode(const std::array<unsigned char, 9> &bytes)
{
    Request r{char(bytes[0]), 0};
    for (int i = 0; i < 8; ++i)
        r.length |= uint64_t(bytes[size_t(1 + i)]) << (8 * i);
    return r;
}

// Reads and discards exactly `length` bytes.
net::awaitable<void> drain(tcp::socket &socket, uint64_t length)
{
    std::vector<char> buffer(kChunk);
    while (length > 0) {
        const size_t want = size_t(std::min<uint64_t>(length, buffer.size()));
        length -= co_await socket.async_read_some(net::buffer(buffer.data(), want), net::use_awaitable);
    }
}

// Writes `length` zero bytes.
net::awaitable<void> produce(tcp::socket &socket, uint64_t length)
{
    const std::vector<char> buffer(kChunk);
    while (length > 0) {
        const size_t n = size_t(std::min<uint64_t>(length, buffer.size()));
        co_await net::async_write(socket, net::buffer(buffer.data(), n), net::use_awaitable);
        length -= n;
    }
}

net::awaitable<void> serveSession(tcp::socket socket)
{
    try {
        socket.set_option(tcp::no_delay(true));
        for (;;) {
            std::array<unsigned char, 9> header{};
            co_await net::async_read(socket, net::buffer(header), net::use_awaitable);
            const Request r = decode(header);
            if (r.length > kMaxRequestBytes)
                co_return;
            if (r.op == 'P' || r.op == 'U') {
                if (r.op == 'U')
                    co_await drain(socket, r.length);
                const char reply = r.op == 'P' ? 'p' : 'u';
                co_await net::async_write(socket, net::buffer(&reply, 1), net::use_awaitable);
            } else if (r.op == 'D') {
                co_await produce(socket, r.length);
            } else {
                co_return; // not our protocol: hang up
            }
        }
    } catch (const boost::system::system_error &) {
        // the client went away
    }
}

net::awaitable<void> acceptLoop(tcp::acceptor &acceptor)
{
    for (;;) {
        tcp::socket socket = co_await acceptor.async_accept(net::use_awaitable);
        net::co_spawn(acceptor.get_executor(), serveSession(std::move(socket)), net::detached);
    }
}

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

net::awaitable<void> runProbe(std::string host, uint16_t port, NetworkProbeOptions options, NetworkProbeResult &out,
                              tcp::socket &socket)
{
    tcp::resolver resolver(socket.get_executor());
    const auto endpoints = co_await resolver.async_resolve(host, std::to_string(port), net::use_awaitable);
    co_await net::async_connect(socket, endpoints, net::use_awaitable);
    socket.set_option(tcp::no_delay(true));

    std::vector<double> rtts;
    for (int i = 0; i < options.pings; ++i) {
        const auto start = Clock::now();
        co_await net::async_write(socket, net::buffer(encode({'P', 0})), net::use_awaitable);
        char reply = 0;
        co_await net::async_read(socket, net::buffer(&reply, 1), net::use_awaitable);
        if (reply != 'p')
            throw Error("the peer does not speak the probe protocol");
        rtts.push_back(secondsSince(start) * 1e3);
    }
    if (!rtts.empty()) {
        std::sort(rtts.begin(), rtts.end());
        out.rttMinMs = rtts.front();
        out.rttMedianMs = rtts[rtts.size() / 2];
    }
    out.pings = int(rtts.size());

    const uint64_t n = options.transferBytes;
    out.transferBytes = n;
    if (n == 0)
        co_return;
    auto start = Clock::now();
    co_await net::async_write(socket, net::buffer(encode({'U', n})), net::use_awaitable);
    co_await produce(socket, n);
    char reply = 0;
    co_await net::async_read(socket, net::buffer(&reply, 1), net::use_awaitable);
    if (reply != 'u')
        throw Error("the peer does not speak the probe protocol");
    out.uploadBytesPerSecond = double(n) / secondsSince(start);

    start = Clock::now();
    co_await net::async_write(socket, net::buffer(encode({'D', n})), net::use_awaitable);
    co_await drain(socket, n);
    out.downloadBytesPerSecond = double(n) / secondsSince(start);
}

} // namespace

struct ProbeServer::Impl
{
    net::io_context io{1};
    tcp::acceptor acceptor{io};
    std::thread thread;
};

ProbeServer::ProbeServer(const std::string &address, uint16_t port)
    : d(std::make_unique<Impl>())
{
    try {
        const tcp::endpoint endpoint(net::ip::make_address(address), port);
        d->acceptor.open(endpoint.protocol());
        d->acceptor.set_option(tcp::acceptor::reuse_address(true));
        d->acceptor.bind(endpoint);
        d->acceptor.listen();
    } catch (const boost::system::system_error &e) {
        throw Error("probe server cannot listen on " + address + ":" + std::to_string(port) + ": " + e.what());
    }
    net::co_spawn(d->io, acceptLoop(d->acceptor), net::detached);
    d->thread = std::thread([this] { d->io.run(); });
}

ProbeServer::~ProbeServer()
{
    d->io.stop();
    d->thread.join();
}

uint16_t ProbeServer::port() const { return d->acceptor.local_endpoint().port(); }

NetworkProbeResult probeNetwork(const std::string &host, uint16_t port, const NetworkProbeOptions &options)
{
    const std::string where = host + ":" + std::to_string(port);
    net::io_context io{1};
    tcp::socket socket(io);
    NetworkProbeResult result;
    std::exception_ptr failure;
    bool done = false;
    net::co_spawn(io, runProbe(host, port, options, result, socket), [&](std::exception_ptr e) {
        failure = e;
        done = true;
    });
    io.run_for(options.timeout);
    if (!done) {
        // Cancel what is pending and let the probe unwind before its state goes away.
        boost::system::error_code ignored;
        socket.close(ignored);
        io.restart();
        io.run_for(std::chrono::seconds(1));
        throw Error("network probe of " + where + " did not finish within " + std::to_string(options.timeout.count()) +
                    " ms");
    }
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const Error &e) {
            throw Error("network probe of " + where + ": " + e.what());
        } catch (const std::exception &e) {
            throw Error("network probe of " + where + " failed: " + e.what());
        }
    }
    return result;
}

} // namespace rookery::device
