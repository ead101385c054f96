// SPDX-License-Identifier: GPL-3.0-or-later
// Opening a listening TCP socket, shared by the peer listener, the coordinator's status
// API and the node's control API. Header-only: its users already include Asio.
#pragma once

#include <cstdint>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>

#include "engine/common/error.h"
#include "engine/net/host_port.h"

namespace rookery::net {

/// "127.0.0.1:8080", or "[::1]:8080" for IPv6. An IPv4 peer seen through a dual-stack
/// socket ("::ffff:192.0.2.7") is written as the IPv4 address it is.
inline std::string endpointText(const boost::asio::ip::tcp::endpoint &e)
{
    auto a = e.address();
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        a = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(e.port());
}

/// "", "0.0.0.0", "::" and "[::]": every interface.
inline bool isWildcardHost(const std::string &text)
{
    return text.empty() || text == "0.0.0.0" || text == "::" || text == "[::]";
}

/// "127.0.0.1", "::1", "[::1]" and the rest of 127/8: this machine only.
inline bool isLoopbackHost(const std::string &text)
{
    const std::string bare = unbracketed(text);
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(bare, ec);
    return !ec && address.is_loopback();
}

/// The address to bind to: "" means every interface, IPv4 and IPv6 ("::", dual stack);
/// brackets around an IPv6 address are allowed. Throws rookery::Error "cannot WHAT on
/// 'TEXT': not an IP address" (`what`: "serve the status API", "listen").
inline boost::asio::ip::address bindAddress(const std::string &text, const std::string &what)
{
    if (text.empty())
        return boost::asio::ip::address_v6::any();
    const std::string bare = unbracketed(text);
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(bare, ec);
    if (ec)
        throw Error("cannot " + what + " on '" + text + "': not an IP address");
    return address;
}

/// Opens, binds and listens. SO_REUSEADDR lets a restarted server take its port back at
/// once. "::" listens on IPv4 too (dual stack); where the system has no IPv6 it listens
/// on every IPv4 interface instead. Returns the port, the one the system chose when
/// `endpoint`'s is 0. Throws rookery::Error "cannot WHAT on ADDRESS:PORT: reason" (the
/// port in use, no permission, an address that is not this machine's: with what to do).
inline uint16_t listenOn(boost::asio::ip::tcp::acceptor &acceptor, boost::asio::ip::tcp::endpoint endpoint,
                         const std::string &what)
{
    namespace ip = boost::asio::ip;
    const bool anyV6 = endpoint.address() == ip::address(ip::address_v6::any());
    boost::system::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (ec && anyV6) { // IPv6 switched off on this machine
        ec = {};
        endpoint = ip::tcp::endpoint(ip::address_v4::any(), endpoint.port());
        acceptor.open(endpoint.protocol(), ec);
    }
    if (!ec && endpoint.address().is_v6() && endpoint.address().to_v6().is_unspecified())
        acceptor.set_option(ip::v6_only(false), ec);
    if (!ec)
        acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
    if (!ec)
        acceptor.bind(endpoint, ec);
    if (!ec)
        acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (ec == boost::system::errc::address_not_available)
        throw Error("cannot " + what + " on " + endpointText(endpoint) + ": " + ec.message() +
                    ": that address is not one of this machine's. Give --bind one of its own addresses, or leave "
                    "--bind out to listen on all of them; an address the router forwards goes in --public-address");
    if (ec)
        throw Error("cannot " + what + " on " + endpointText(endpoint) + ": " + ec.message());
    return acceptor.local_endpoint().port();
}

} // namespace rookery::net
