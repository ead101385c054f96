// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rookery::control {

/// One request, as the handler sees it: the token is already checked.
struct ControlRequest
{
    std::string method; ///< "GET", "POST", "PUT", ...
    std::string path;   ///< "/v1/status", without the query
    std::map<std::string, std::string> query;
    std::string body;
};

struct ControlResponse
{
    int status = 200;
    std::string body;
    std::string contentType = "application/json";
};

struct ControlServerConfig
{
    std::string bindAddress = "127.0.0.1"; ///< must be a loopback address
    uint16_t port = 0;                     ///< 0: any free port (see port())
    std::string token;                     ///< what a client sends as "Authorization: Bearer <token>"
    std::vector<std::string> openPaths;    ///< served without the token (e.g. "/metrics")
    std::string serverName = "rookery-node";
    size_t maxConnections = 32;
};

/// A node's local control API: plain HTTP/1.1 on a loopback address, served by one
/// thread of its own (a headless node in local mode has no other network thread).
/// Every request must carry the token as "Authorization: Bearer <token>", except GET on
/// the open paths; without it the answer is 401 and the handler is not called. A Host
/// header naming anything but a loopback address gets 403, so a web page that rebinds
/// a name of its own to 127.0.0.1 cannot read even the open paths.
///
/// Thread safety: construct, stop and destroy from any one thread. The handler is
/// called on the server's thread, one request at a time; keep it quick.
class ControlServer
{
public:
    using Handler = std::function<ControlResponse(const ControlRequest &)>;

    /// Binds and starts serving at once. Throws rookery::Error when the address is not
    /// a loopback address, the token is empty, or the port cannot be bound.
    ControlServer(ControlServerConfig config, Handler handler);
    ~ControlServer();
    ControlServer(const ControlServer &) = delete;
    ControlServer &operator=(const ControlServer &) = delete;

    uint16_t port() const;
    /// Closes every connection and joins the thread. Idempotent.
    void stop();

    struct Impl;

private:
    std::shared_ptr<Impl> m;
};

} // namespace rookery::control
