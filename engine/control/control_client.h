// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace rookery::control {

struct HttpReply
{
    int status = 0;
    std::string body;
    std::string contentType;
};

/// A blocking HTTP/1.1 client for a node's control API on this machine: one keep-alive
/// connection, opened on first use and again after it broke, every request bounded by
/// a timeout. Sends the token as "Authorization: Bearer <token>" when one is set.
///
/// Thread safety: use from one thread at a time (RemoteEngine's worker, or a test).
class ControlClient
{
public:
    ControlClient(std::string host, uint16_t port, std::string token,
                  std::chrono::milliseconds timeout = std::chrono::seconds(3));
    ~ControlClient();
    ControlClient(const ControlClient &) = delete;
    ControlClient &operator=(const ControlClient &) = delete;

    /// Sends one request and reads the answer, whatever its status. Throws
    /// rookery::Error when there is no answer (refused, timed out, broken).
    HttpReply request(std::string_view method, std::string_view target, std::string body = {});

    uint16_t port() const { return m_port; }

private:
    struct Impl;
    std::unique_ptr<Impl> d;
    uint16_t m_port;
};

} // namespace rookery::control
