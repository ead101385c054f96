// SPDX-License-Identifier: GPL-3.0-or-later
// bench_relay: a TCP stream spliced through our relay (engine/relay) against a direct
// TCP stream, on loopback in one process: bulk throughput one way (`ratio`, relayed /
// direct bytes per second) and the round trip of a 64-byte message (`rtt_ratio`,
// relayed / direct median). The clients are blocking sockets, one thread per end; the
// relay runs its one io_context thread, as it does by default.
//
// Then the same over our real links (relay_links.cpp): TLS 1.3 WebSocket with mutual
// certificates, direct and relayed, 1 MiB tensors one way (`link_ratio`) and echoed
// small messages (`link_rtt_ratio`): what a pipeline link sees.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "bench/relay_links.h"
#include "bench/support/bench_report.h"
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/relay/relay_server.h"

using namespace rookery;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr size_t kPingBytes = 64;
constexpr int kWarmUpPings = 200;

// A connected stream: what `a` writes, `b` reads.
struct Stream
{
    explicit Stream(asio::io_context &ioc)
        : a(ioc)
        , b(ioc)
    { }
    tcp::socket a, b;
};

tcp::endpoint loopback(uint16_t port) { return {asio::ip::make_address("127.0.0.1"), port}; }

void directStream(asio::io_context &ioc, Stream &s)
{
    tcp::acceptor acceptor(ioc, loopback(0));
    s.a.connect(acceptor.local_endpoint());
    acceptor.accept(s.b);
}

void relayedStream(relay::RelayServer &server, Stream &s)
{
    const auto [ta, tb] = server.expectPair("bench-a", "bench-b");
    for (auto [socket, token] : {std::pair{&s.a, ta}, std::pair{&s.b, tb}}) {
        socket->connect(loopback(server.port()));
        asio::write(*socket, asio::buffer(relay::relayPreamble(token)));
    }
    for (auto *socket : {&s.a, &s.b}) {
        uint8_t reply = 0xff;
        asio::read(*socket, asio::buffer(&reply, 1));
        if (relay::RelayReply(reply) != relay::RelayReply::Paired)
            throw Error(relay::describeRelayReply(relay::RelayReply(reply)));
    }
}

double cpuSeconds()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Bulk
{
    double bytesPerSecond = 0;
    double cpuNsPerByte = 0; // the whole process: both clients and, when relayed, the relay
};

// `total` bytes from a to b in 1 MiB writes, timed from the first write to the last read.
Bulk throughput(Stream &s, uint64_t total)
{
    const double cpuBefore = cpuSeconds();
    const auto start = Clock::now();
    std::thread reader([&] {
        std::vector<uint8_t> in(kChunkBytes);
        for (uint64_t got = 0; got < total;)
            got += s.b.read_some(asio::buffer(in));
    });
    const std::vector<uint8_t> out(kChunkBytes, 0x5a);
    for (uint64_t sent = 0; sent < total; sent += kChunkBytes)
        asio::write(s.a, asio::buffer(out.data(), std::min<uint64_t>(kChunkBytes, total - sent)));
    reader.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return {double(total) / seconds, (cpuSeconds() - cpuBefore) * 1e9 / double(total)};
}

// Round trips of a 64-byte message, b echoing; microseconds, sorted.
std::vector<double> roundTrips(Stream &s, int count)
{
    const int total = count + kWarmUpPings;
    std::thread echo([&] {
        std::array<uint8_t, kPingBytes> m{};
        for (int i = 0; i < total; ++i) {
            asio::read(s.b, asio::buffer(m));
            asio::write(s.b, asio::buffer(m));
        }
    });
    std::array<uint8_t, kPingBytes> m{};
    std::vector<double> rtts;
    for (int i = 0; i < total; ++i) {
        const auto sent = Clock::now();
        asio::write(s.a, asio::buffer(m));
        asio::read(s.a, asio::buffer(m));
        if (i >= kWarmUpPings)
            rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
    }
    echo.join();
    std::sort(rtts.begin(), rtts.end());
    return rtts;
}

double percentile(const std::vector<double> &sorted, double q)
{
    return sorted.empty() ? 0 : sorted[std::min(sorted.size() - 1, size_t(q * double(sorted.size())))];
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(argc, argv, "bench_relay",
                                               "A TCP stream through the relay against a direct TCP stream.");
    bench::BenchReport report("bench_relay", opts.quick);
    log::setMinimumLevel(log::Level::Warning);
    const uint64_t total = (opts.quick ? 64ull : 256ull) << 20;
    const int rounds = opts.quick ? 2 : 3;
    const int pings = opts.quick ? 2000 : 10000;

    asio::io_context ioc; // the clients' sockets; they are used blocking, nothing runs it
    relay::RelaySettings settings;
    settings.bindAddress = "127.0.0.1";
    relay::RelayServer server(settings);
    Stream direct(ioc), relayed(ioc);
    directStream(ioc, direct);
    relayedStream(server, relayed);
    for (auto *s : {&direct, &relayed})
        for (auto *socket : {&s->a, &s->b})
            socket->set_option(tcp::no_delay(true));

    throughput(relayed, total / 4); // warm-up
    throughput(direct, total / 4);
    Bulk bestDirect, bestRelayed;
    for (int r = 0; r < rounds; ++r) { // interleaved, so that both see the same machine
        const Bulk d = throughput(direct, total), rl = throughput(relayed, total);
        if (d.bytesPerSecond > bestDirect.bytesPerSecond)
            bestDirect = d;
        if (rl.bytesPerSecond > bestRelayed.bytesPerSecond)
            bestRelayed = rl;
    }
    const auto directRtts = roundTrips(direct, pings), relayedRtts = roundTrips(relayed, pings);
    const double directP50 = percentile(directRtts, 0.5), relayedP50 = percentile(relayedRtts, 0.5);
    const double directP99 = percentile(directRtts, 0.99), relayedP99 = percentile(relayedRtts, 0.99);
    if (server.counters().bytesRelayed < uint64_t(rounds) * total)
        throw Error("the relay counted fewer bytes than were sent through it");

    // The same over our links: TLS 1.3 WebSocket with mutual certificates, direct through
    // a listener or relayed (the two ends run TLS through the relay), 1 MiB tensors.
    const int linkMessages = opts.quick ? 64 : 256;
    const int linkPings = opts.quick ? 500 : 2000;
    constexpr size_t kLinkMessageBytes = 1 << 20;
    bench::LinkFigures linkDirect, linkRelayed;
    for (int r = 0; r < rounds; ++r) {
        const auto d = bench::measureLink(nullptr, linkMessages, kLinkMessageBytes, r == 0 ? linkPings : 0);
        const auto rl = bench::measureLink(&server, linkMessages, kLinkMessageBytes, r == 0 ? linkPings : 0);
        if (d.bytesPerSecond > linkDirect.bytesPerSecond)
            linkDirect.bytesPerSecond = d.bytesPerSecond;
        if (rl.bytesPerSecond > linkRelayed.bytesPerSecond)
            linkRelayed.bytesPerSecond = rl.bytesPerSecond;
        if (r == 0) {
            linkDirect.roundTrips = d.roundTrips;
            linkRelayed.roundTrips = rl.roundTrips;
        }
    }
    const double linkDirectP50 = percentile(linkDirect.roundTrips, 0.5);
    const double linkRelayedP50 = percentile(linkRelayed.roundTrips, 0.5);

    std::printf("%lld MiB one way, best of %d; %d round trips of %zu bytes\n", (long long)(total >> 20), rounds, pings,
                kPingBytes);
    std::printf("  %-22s %14s %14s %16s\n", "", "direct TCP", "relayed", "relayed/direct");
    std::printf("  %-22s %14.3f %14.3f %16.3f\n", "throughput (GB/s)", bestDirect.bytesPerSecond / 1e9,
                bestRelayed.bytesPerSecond / 1e9, bestRelayed.bytesPerSecond / bestDirect.bytesPerSecond);
    std::printf("  %-22s %14.2f %14.2f %16.3f\n", "CPU per byte (ns)", bestDirect.cpuNsPerByte,
                bestRelayed.cpuNsPerByte, bestRelayed.cpuNsPerByte / bestDirect.cpuNsPerByte);
    std::printf("  %-22s %14.1f %14.1f %16.3f\n", "round trip p50 (us)", directP50, relayedP50, relayedP50 / directP50);
    std::printf("  %-22s %14.1f %14.1f %16.3f\n", "round trip p99 (us)", directP99, relayedP99, relayedP99 / directP99);

    std::printf("links (TLS, %d x 1 MiB tensors, best of %d; %d round trips)\n", linkMessages, rounds, linkPings);
    std::printf("  %-22s %14s %14s %16s\n", "", "direct link", "relayed link", "relayed/direct");
    std::printf("  %-22s %14.3f %14.3f %16.3f\n", "throughput (GB/s)", linkDirect.bytesPerSecond / 1e9,
                linkRelayed.bytesPerSecond / 1e9, linkRelayed.bytesPerSecond / linkDirect.bytesPerSecond);
    std::printf("  %-22s %14.1f %14.1f %16.3f\n", "round trip p50 (us)", linkDirectP50, linkRelayedP50,
                linkRelayedP50 / linkDirectP50);

    report.setResult(bestDirect.bytesPerSecond / 1e9, bestRelayed.bytesPerSecond / 1e9, "GB/s");
    report.add("link_ratio", linkRelayed.bytesPerSecond / linkDirect.bytesPerSecond);
    report.add("link_rtt_ratio", linkRelayedP50 / linkDirectP50);
    report.add("link_direct_gbps", linkDirect.bytesPerSecond / 1e9);
    report.add("link_relayed_gbps", linkRelayed.bytesPerSecond / 1e9);
    report.add("link_direct_p50_us", linkDirectP50);
    report.add("link_relayed_p50_us", linkRelayedP50);
    report.add("rtt_ratio", relayedP50 / directP50);
    report.add("bytes_per_measurement", double(total));
    report.add("direct_gbps", bestDirect.bytesPerSecond / 1e9);
    report.add("relayed_gbps", bestRelayed.bytesPerSecond / 1e9);
    report.add("direct_cpu_ns_per_byte", bestDirect.cpuNsPerByte);
    report.add("relayed_cpu_ns_per_byte", bestRelayed.cpuNsPerByte);
    report.add("direct_p50_us", directP50);
    report.add("relayed_p50_us", relayedP50);
    report.add("direct_p99_us", directP99);
    report.add("relayed_p99_us", relayedP99);
    report.add("relay_buffer_bytes", double(settings.bufferBytes));
    report.finish(opts.jsonPath);
    return 0;
}
