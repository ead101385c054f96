// SPDX-License-Identifier: GPL-3.0-or-later
// One HTTPS GET to 127.0.0.1 without checking the certificate, as a test scrapes the
// coordinator's status port (tst_status_api checks the pin). Header-only; link
// rookery_boost and rookery_net.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "engine/net/tls_context.h"

namespace rookery::test {

struct HttpsReply
{
    int status = 0;
    std::string contentType;
    std::string body;
};

/// Throws boost::system::system_error when the exchange fails.
inline HttpsReply httpsGet(uint16_t port, const std::string &target)
{
    namespace asio = boost::asio;
    namespace beast = boost::beast;
    namespace http = beast::http;
    asio::io_context ioc;
    auto tls = net::makeTlsContext({}, false);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, *tls);
    stream.set_verify_mode(asio::ssl::verify_none);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    beast::get_lowest_layer(stream).connect({asio::ip::make_address("127.0.0.1"), port});
    stream.handshake(asio::ssl::stream_base::client);
    http::request<http::empty_body> req(http::verb::get, target, 11);
    req.set(http::field::host, "127.0.0.1");
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    return {int(res.result_int()), std::string(res[http::field::content_type]), res.body()};
}

} // namespace rookery::test
