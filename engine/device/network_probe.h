// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace rookery::device {

/// What a network probe measured to one endpoint.
struct NetworkProbeResult
{
    double rttMinMs = 0;
    double rttMedianMs = 0;
    double uploadBytesPerSecond = 0;   ///< us -> endpoint
    double downloadBytesPerSecond = 0; ///< endpoint -> us
    int pings = 0;
    uint64_t transferBytes = 0; ///< sent each way
};

struct NetworkProbeOptions
{
    int pings = 10;
    uint64_t transferBytes = uint64_t(8) << 20; ///< each way
    std::chrono::milliseconds timeout{5000};    ///< for the whole probe, connecting included
};

/// Answers probes on a TCP port, on its own thread: echoes pings, swallows uploads and
/// produces downloads. The transport will serve the same requests on its own port;
/// for now it is used on loopback (tests, bench).
///
/// Protocol: each request is one byte ('P' ping, 'U' upload, 'D' download) and an
/// 8-byte little-endian length; an upload's bytes follow it. The server answers a ping
/// or a finished upload with one byte and a download with `length` bytes.
/// Requests over 1 GiB close the connection.
///
/// Thread safety: construct and destroy on one thread; the server runs on its own.
class ProbeServer
{
public:
    /// Listens on `address`:`port` (0: any free port). Throws rookery::Error if it cannot.
    explicit ProbeServer(const std::string &address = "127.0.0.1", uint16_t port = 0);
    ~ProbeServer();
    ProbeServer(const ProbeServer &) = delete;
    ProbeServer &operator=(const ProbeServer &) = delete;

    uint16_t port() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

/// Measures round-trip latency (pings of one byte) and throughput both ways to a probe
/// server. Never takes longer than options.timeout: throws rookery::Error naming the
/// endpoint when it cannot connect, the peer misbehaves, or time runs out.
///
/// Thread safety: may be called from any thread; it runs its own event loop.
NetworkProbeResult probeNetwork(const std::string &host, uint16_t port, const NetworkProbeOptions &options = {});

} // namespace rookery::device
