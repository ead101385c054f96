// SPDX-License-Identifier: GPL-3.0-or-later
// bench_transport: bulk tensor throughput over our TLS WebSocket links against the same
// bytes over a bare TLS stream (same TLS settings and cipher, no WebSocket framing, no
// codec, no queues: key `ratio`) and over plain TCP (`ratio_vs_tcp`); and the round
// trip of a small message (`p50_us`, `p99_us`) and what a message and a byte cost in CPU,
// both ends together (`link_cpu_us_per_message`, `link_cpu_ns_per_byte`: inputs of
// bench_sim_validation's transport model). One process, loopback; each end of a
// link has its own network thread, as two processes would.
//
// The bare TLS stream runs twice, with the same TLS context as our links: blocking, one
// thread per end; and asynchronous, one io_context thread per end as our links have.
// `ratio` is against the faster of the two.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <sys/resource.h>

#include "bench/baselines/bare_transport.h"
#include "bench/support/bench_report.h"
#include "bench/support/link_pump.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/log.h"
#include "engine/net/certificate_authority.h"
#include "engine/net/crc32c.h"
#include "engine/net/dialer.h"
#include "engine/net/identity.h"
#include "engine/net/listener.h"

using namespace rookery;
using namespace rookery::net;
using Clock = std::chrono::steady_clock;

namespace {

using bench::Flow;
using bench::pump;

// One 64-sample microbatch of a mid-sized activation (the CNN's first conv layer is
// 1.6 MiB); large tensors are measured too, see `ratio_16mib`.
constexpr size_t kTensorBytes = 1 << 20;
constexpr size_t kLargeTensorBytes = 16 << 20;

// CPU seconds of the whole process (all threads, user + system): what a byte costs,
// whatever else runs on the machine.
double cpuSeconds()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Bulk
{
    double c2s = 0, s2c = 0, bare = 0, blocking = 0, tcp = 0;             // best bytes/s
    double cpuLink = 1e9, cpuBare = 1e9, cpuBlocking = 1e9, cpuTcp = 1e9; // best CPU ns per byte
    std::string bareCipher;
    double link() const { return 2 / (1 / c2s + 1 / s2c); }      // same bytes each way: harmonic mean
    double bestBare() const { return std::max(bare, blocking); } // the stricter of the two TLS baselines
};

// The two ends of one link and the flows that watch them.
struct LinkPair
{
    std::shared_ptr<Link> client, server;
    Flow toServer, toClient;
    std::atomic<bool> echo{false};
    std::mutex rttMutex;
    std::condition_variable rttCv;
    std::vector<double> rtts;
    int rttsWanted = 0;
    Clock::time_point sentAt;
    TensorBuffer small;
};

Bulk measureBulk(LinkPair &p, const TlsCredentials &server, const TlsCredentials &client, size_t tensorBytes,
                 uint64_t total, int rounds)
{
    std::vector<uint8_t> payload(tensorBytes);
    for (size_t i = 0; i < payload.size(); ++i)
        payload[i] = uint8_t(i * 2654435761u >> 13);
    const auto tensor = tensorBufferFromBytes(DType::Float32, {int64_t(tensorBytes / 4)}, payload);
    Bulk b;
    auto timed = [](uint64_t bytes, double &cpu, auto &&fn) {
        const double before = cpuSeconds();
        fn();
        cpu = std::min(cpu, (cpuSeconds() - before) * 1e9 / double(bytes));
    };
    pump(*p.client, p.toServer, tensor, std::min<uint64_t>(total / 4, 256 << 20)); // warm-up
    for (int r = 0; r < rounds; ++r) {
        // Interleaved, so that all four see the same machine.
        double cpuC2s = 1e9, cpuS2c = 1e9;
        timed(total, cpuC2s, [&] { b.c2s = std::max(b.c2s, pump(*p.client, p.toServer, tensor, total)); });
        timed(total, cpuS2c, [&] { b.s2c = std::max(b.s2c, pump(*p.server, p.toClient, tensor, total)); });
        b.cpuLink = std::min(b.cpuLink, (cpuC2s + cpuS2c) / 2);
        timed(total, b.cpuBare, [&] {
            const auto s = bench::bareAsyncTlsThroughput(server, client, tensorBytes, total);
            b.bare = std::max(b.bare, s.bytesPerSecond);
            b.bareCipher = s.cipher;
        });
        timed(total, b.cpuBlocking, [&] {
            b.blocking = std::max(b.blocking,
                                  bench::bareStreamThroughput(true, server, client, tensorBytes, total).bytesPerSecond);
        });
        timed(total, b.cpuTcp, [&] {
            b.tcp = std::max(b.tcp, bench::bareStreamThroughput(false, {}, {}, tensorBytes, total).bytesPerSecond);
        });
    }
    return b;
}

// Round trips of a 256-byte tensor, each sent by the client's network thread as soon
// as the previous answer arrives (the server's handler echoes it).
std::vector<double> measureRoundTrips(LinkPair &p, int count)
{
    p.small = tensorBufferFromBytes(DType::Float32, {64}, std::vector<uint8_t>(256, 1));
    p.echo = true;
    {
        std::unique_lock lock(p.rttMutex);
        p.rtts.clear();
        p.rttsWanted = count + 200; // the first 200 warm up
        p.sentAt = Clock::now();
    }
    if (p.client->send(Gradients{0, 0, p.small}) != SendResult::Queued)
        throw Error("cannot send a ping");
    std::unique_lock lock(p.rttMutex);
    p.rttCv.wait(lock, [&] { return int(p.rtts.size()) >= p.rttsWanted; });
    std::vector<double> r(p.rtts.begin() + 200, p.rtts.end());
    std::sort(r.begin(), r.end());
    p.echo = false;
    return r;
}

double percentile(const std::vector<double> &sorted, double q)
{
    return sorted.empty() ? 0 : sorted[std::min(sorted.size() - 1, size_t(q * double(sorted.size())))];
}

std::string gbps(double bytesPerSecond)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f GB/s", bytesPerSecond / 1e9);
    return buf;
}

void printBulk(const char *title, const Bulk &b)
{
    std::printf("%s\n  link client->server %s (masked), server->client %s; bare TLS async %s, blocking %s; "
                "plain TCP %s\n",
                title, gbps(b.c2s).c_str(), gbps(b.s2c).c_str(), gbps(b.bare).c_str(), gbps(b.blocking).c_str(),
                gbps(b.tcp).c_str());
    std::printf("  CPU per byte, both ends together: link %.2f ns, bare TLS async %.2f ns, blocking %.2f ns, "
                "TCP %.2f ns\n",
                b.cpuLink, b.cpuBare, b.cpuBlocking, b.cpuTcp);
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(argc, argv, "bench_transport",
                                               "TLS WebSocket links against a bare TLS stream and plain TCP.");
    bench::BenchReport report("bench_transport", opts.quick);
    log::setMinimumLevel(log::Level::Warning);
    const uint64_t total = (opts.quick ? 768ull : 3072ull) << 20;
    const int rounds = opts.quick ? 2 : 3;
    const int pings = opts.quick ? 2000 : 10000;

    const auto ca = CertificateAuthority::create("bench");
    const auto serverId = Identity::generate(), clientId = Identity::generate();
    const TlsCredentials serverCreds{ca.issue(serverId.publicKeyPem()), serverId.privateKeyPem(), ca.certificatePem()};
    const TlsCredentials clientCreds{ca.issue(clientId.publicKeyPem()), clientId.privateKeyPem(), ca.certificatePem()};

    NetContext serverNet(1), clientNet(1); // one network thread per end, as two processes
    LinkPair p;
    std::mutex openMutex;
    std::condition_variable openCv;
    LinkEvents se;
    se.opened = [&](const std::shared_ptr<Link> &l) {
        std::lock_guard lock(openMutex);
        p.server = l;
        openCv.notify_all();
    };
    se.message = [&](const std::shared_ptr<Link> &l, Message &&m) {
        if (p.echo)
            (void)l->send(m);
        else if (auto *a = std::get_if<Activations>(&m))
            p.toServer.onTensor(a->activations.bytes);
    };
    se.writable = [&](const std::shared_ptr<Link> &) { p.toClient.onWritable(); };
    ListenerConfig lc;
    lc.bindAddress = "127.0.0.1";
    lc.credentials = serverCreds;
    lc.link.nodeId = serverId.nodeId();
    Listener listener(serverNet, lc, se);
    // The server's `opened` may run before the client has read the HelloAck: wait for
    // both ends, so that the client's PeerInfo (its cipher) is recorded before we read it.
    bool clientOpen = false;
    LinkEvents ce;
    ce.opened = [&](const std::shared_ptr<Link> &) {
        std::lock_guard lock(openMutex);
        clientOpen = true;
        openCv.notify_all();
    };
    ce.message = [&](const std::shared_ptr<Link> &l, Message &&m) {
        if (auto *a = std::get_if<Activations>(&m))
            return p.toClient.onTensor(a->activations.bytes);
        std::lock_guard lock(p.rttMutex);
        const auto now = Clock::now();
        p.rtts.push_back(std::chrono::duration<double, std::micro>(now - p.sentAt).count());
        if (int(p.rtts.size()) < p.rttsWanted) {
            p.sentAt = now;
            (void)l->send(Gradients{p.rtts.size(), 0, p.small});
        } else {
            p.rttCv.notify_all();
        }
    };
    ce.writable = [&](const std::shared_ptr<Link> &) { p.toServer.onWritable(); };
    DialConfig dc;
    dc.host = "127.0.0.1";
    dc.port = listener.port();
    dc.credentials = clientCreds;
    dc.link.nodeId = clientId.nodeId();
    p.client = dial(clientNet, dc, ce);
    {
        std::unique_lock lock(openMutex);
        if (!openCv.wait_for(lock, std::chrono::seconds(30), [&] { return p.server != nullptr && clientOpen; }))
            throw Error("the link did not open within 30 s");
    }
    const std::string cipher = p.client->peer().cipher;
    std::printf("cipher %s; CRC-32C %s; %lld MiB per measurement, best of %d\n", cipher.c_str(),
                crc32cAccelerated() ? "in hardware" : "in software", (long long)(total >> 20), rounds);

    const Bulk main = measureBulk(p, serverCreds, clientCreds, kTensorBytes, total, rounds);
    if (main.bareCipher != cipher)
        throw Error("the baseline negotiated " + main.bareCipher + ", the link " + cipher);
    printBulk("1 MiB tensors:", main);
    const Bulk large = measureBulk(p, serverCreds, clientCreds, kLargeTensorBytes, total, rounds);
    printBulk("16 MiB tensors:", large);

    report.setResult(main.bestBare() / 1e9, main.link() / 1e9, "GB/s");
    report.add("ratio_vs_tcp", main.link() / main.tcp);
    report.add("cipher", cipher);
    report.add("tensor_bytes", double(kTensorBytes));
    report.add("link_client_to_server_gbps", main.c2s / 1e9);
    report.add("link_server_to_client_gbps", main.s2c / 1e9);
    report.add("async_tls_gbps", main.bare / 1e9);
    report.add("blocking_tls_gbps", main.blocking / 1e9);
    report.add("tcp_gbps", main.tcp / 1e9);
    report.add("link_cpu_ns_per_byte", main.cpuLink);
    report.add("async_tls_cpu_ns_per_byte", main.cpuBare);
    report.add("blocking_tls_cpu_ns_per_byte", main.cpuBlocking);
    report.add("tcp_cpu_ns_per_byte", main.cpuTcp);
    report.add("ratio_16mib", large.link() / large.bestBare());
    report.add("ratio_vs_tcp_16mib", large.link() / large.tcp);

    const double cpuBeforePings = cpuSeconds();
    const auto rtts = measureRoundTrips(p, pings);
    // Every round trip is two messages, each sent by one end and received by the other;
    // the 256 bytes are a fraction of a microsecond at the bulk rate above.
    const double cpuPerMessageUs = (cpuSeconds() - cpuBeforePings) * 1e6 / (2.0 * (pings + 200));
    const auto bareRtts = bench::bareTlsRoundTrips(serverCreds, clientCreds, 256 + 80, pings);
    std::printf(
        "256-byte tensor round trip: p50 %.1f us, p99 %.1f us (bare TLS, same bytes: p50 %.1f us, p99 %.1f us)\n",
        percentile(rtts, 0.5), percentile(rtts, 0.99), percentile(bareRtts, 0.5), percentile(bareRtts, 0.99));
    std::printf("  CPU per small message, both ends together: %.1f us\n", cpuPerMessageUs);
    report.add("link_cpu_us_per_message", cpuPerMessageUs);
    report.add("p50_us", percentile(rtts, 0.5));
    report.add("p99_us", percentile(rtts, 0.99));
    report.add("bare_tls_p50_us", percentile(bareRtts, 0.5));
    report.add("bare_tls_p99_us", percentile(bareRtts, 0.99));

    p.client->close();
    listener.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    p.client.reset();
    p.server.reset();
    report.finish(opts.jsonPath);
    return 0;
}
