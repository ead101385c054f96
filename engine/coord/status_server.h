// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/coord/status_view.h"
#include "engine/net/net_context.h"
#include "engine/net/tls_credentials.h"

namespace rookery::coord {

struct StatusServerConfig
{
    std::string bindAddress = "0.0.0.0";
    uint16_t port = 0;               ///< 0: an ephemeral port (see port())
    net::TlsCredentials credentials; ///< the coordinator's certificate and key
    std::chrono::milliseconds feedInterval{1000};
    /// A feed is closed (going away: "connect again") after this long, so that no socket
    /// is held for ever.
    std::chrono::milliseconds feedLifetime{3'600'000};
    size_t maxConnections = 256;
    /// Of those, from one IP address (0: no cap), so that one client cannot take them all.
    size_t maxConnectionsPerAddress = 32;
    /// Requests that send it ("Authorization: Bearer <token>") get the full view; empty:
    /// nobody does.
    std::string operatorToken;
};

/// The current status document in one view (status_view.h) and a version that changes
/// whenever it does.
struct StatusDocument
{
    uint64_t version = 0;
    std::shared_ptr<const std::string> json;
};

/// The coordinator's status API: HTTPS (TLS 1.3, the coordinator's certificate) on its
/// own port. GET /v1/status returns the status JSON; GET /v1/status/feed upgrades to a
/// WebSocket that pushes it every feed interval, and sooner when it changes. Both serve
/// the public view, or the full one to a request with the operator token; a request
/// with any other Authorization gets 401 and the public view is not implied. Malformed
/// requests get 400, other methods 405 and unknown paths 404, each with a JSON body
/// {"error": "..."} naming the problem. GET /metrics answers from `metrics` (Prometheus
/// text, coordinator_metrics.h) when one is given, else 404.
///
/// Thread safety: construct and stop from any thread; `source` and `metrics` are called
/// on the NetContext's threads.
class StatusServer
{
public:
    using Source = std::function<StatusDocument(StatusView)>; ///< built only for the views asked for
    using MetricsSource = std::function<std::string()>;

    /// Binds at once; throws rookery::Error when it cannot.
    StatusServer(net::NetContext &context, StatusServerConfig config, Source source, MetricsSource metrics = {});
    ~StatusServer();
    StatusServer(const StatusServer &) = delete;
    StatusServer &operator=(const StatusServer &) = delete;

    uint16_t port() const;
    /// Stops accepting and closes every connection. Idempotent.
    void stop();

    struct Impl;

private:
    std::shared_ptr<Impl> m;
};

} // namespace rookery::coord
