// SPDX-License-Identifier: GPL-3.0-or-later
// Opening a listening TCP socket, shared by the peer listener, the coordinator's status
// API and the node's control API. Header-only: its users already include Asio.
#pragma once

#include <cstdint>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "engine/common/error.h"

namespace rookery::net {

/// "127.0.0.1:8080", or "[::1]:8080" for IPv6.
inline std::string endpointText(const boost::asio::ip::tcp::endpoint &e)
{
    const auto a = e.address();
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(e.port());
}

/// The address to bind to; throws rookery::Error "cannot WHAT on 'TEXT': not an IP
/// address" (`what`: "serve the status API", "listen").
inline boost::asio::ip::address bindAddress(const std::string &text, const std::string &what)
{
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(text, ec);
    if (ec)
        throw Error("cannot " + what + " on '" + text + "': not an IP address");
    return address;
}

/// Opens, binds and listens. SO_REUSEADDR lets a restarted server take its port back at
/// once. Returns the port, the one the system chose when `endpoint`'s is 0. Throws
/// rookery::Error "cannot WHAT on ADDRESS:PORT: reason" (the port in use, no permission).
inline uint16_t listenOn(boost::asio::ip::tcp::acceptor &acceptor, const boost::asio::ip::tcp::endpoint &endpoint,
                         const std::string &what)
{
    boost::system::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec)
        acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
    if (!ec)
        acceptor.bind(endpoint, ec);
    if (!ec)
        acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (ec)
        throw Error("cannot " + what + " on " + endpointText(endpoint) + ": " + ec.message());
    return acceptor.local_endpoint().port();
}

} // namespace rookery::net
