// SPDX-License-Identifier: GPL-3.0-or-later
// Baselines for bench_transport: the same bytes over a bare TLS stream (our TLS
// settings and certificates, no WebSocket, no framing, no queues) and over plain TCP.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/net/tls_credentials.h"

namespace rookery::bench {

struct StreamResult
{
    double bytesPerSecond = 0;
    std::string cipher; ///< negotiated on both ends (checked equal); "none" for TCP
};

/// One thread writes `totalBytes` in writes of `chunkBytes`, another reads them, over
/// 127.0.0.1. With `tls`, through Boost.Asio's SSL stream with makeTlsContext().
StreamResult bareStreamThroughput(bool tls, const net::TlsCredentials &server, const net::TlsCredentials &client,
                                  size_t chunkBytes, uint64_t totalBytes);

/// The same over TLS, driven the way our links are: asynchronous operations, each end
/// on its own io_context thread. This isolates what framing, codec and queues cost from
/// what the asynchronous model costs.
StreamResult bareAsyncTlsThroughput(const net::TlsCredentials &server, const net::TlsCredentials &client,
                                    size_t chunkBytes, uint64_t totalBytes);

/// Round trips of `bytes`-byte messages over bare TLS; microseconds, sorted.
std::vector<double> bareTlsRoundTrips(const net::TlsCredentials &server, const net::TlsCredentials &client,
                                      size_t bytes, int count);

} // namespace rookery::bench
