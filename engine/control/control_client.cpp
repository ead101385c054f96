// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/control/control_client.h"

#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "engine/common/error.h"
#include "engine/common/version.h"

namespace rookery::control {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct ControlClient::Impl
{
    std::string host;
    std::string token;
    std::chrono::milliseconds timeout;
    asio::io_context ioc;
    std::optional<beast::tcp_stream> stream;
    beast::flat_buffer buffer;

    // Runs the io_context until `done`, or until the timeout cancels the stream.
    void runUntil(const bool &done)
    {
        ioc.restart();
        while (!done && ioc.run_one() > 0) { }
    }

    void connect(uint16_t port)
    {
        stream.emplace(ioc);
        buffer.clear();
        beast::error_code result = asio::error::would_block;
        bool done = false;
        stream->expires_after(timeout);
        beast::error_code ec;
        const auto address = asio::ip::make_address(host, ec);
        if (ec)
            throw Error("not an IP address: '" + host + "'");
        stream->async_connect(tcp::endpoint(address, port), [&](beast::error_code e) {
            result = e;
            done = true;
        });
        runUntil(done);
        if (result) {
            stream.reset();
            throw Error("cannot reach the node's control API at " + host + ":" + std::to_string(port) + ": " +
                        result.message());
        }
    }

    HttpReply exchange(http::request<http::string_body> &req)
    {
        beast::error_code result;
        bool done = false;
        stream->expires_after(timeout);
        http::async_write(*stream, req, [&](beast::error_code e, size_t) {
            result = e;
            done = true;
        });
        runUntil(done);
        if (result)
            throw beast::system_error(result);
        http::response_parser<http::string_body> parser;
        parser.body_limit(16 * 1024 * 1024);
        done = false;
        stream->expires_after(timeout);
        http::async_read(*stream, buffer, parser, [&](beast::error_code e, size_t) {
            result = e;
            done = true;
        });
        runUntil(done);
        if (result)
            throw beast::system_error(result);
        auto res = parser.release();
        HttpReply reply{int(res.result_int()), std::move(res.body()), std::string(res[http::field::content_type])};
        if (!res.keep_alive())
            stream.reset();
        return reply;
    }
};

ControlClient::ControlClient(std::string host, uint16_t port, std::string token, std::chrono::milliseconds timeout)
    : d(std::make_unique<Impl>())
    , m_port(port)
{
    d->host = std::move(host);
    d->token = std::move(token);
    d->timeout = timeout;
}

ControlClient::~ControlClient() = default;

HttpReply ControlClient::request(std::string_view method, std::string_view target, std::string body)
{
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    if (req.method() == http::verb::unknown)
        req.method_string(method);
    req.set(http::field::host, d->host + ":" + std::to_string(m_port));
    req.set(http::field::user_agent, std::string("rookery ") + kVersion);
    if (!d->token.empty())
        req.set(http::field::authorization, "Bearer " + d->token);
    if (!body.empty())
        req.set(http::field::content_type, "application/json");
    req.keep_alive(true);
    req.body() = std::move(body);
    req.prepare_payload();
    // A kept-alive connection the node closed in the meantime fails on first use: one
    // more try on a fresh connection tells that apart from a node that is gone.
    for (int attempt = 0;; ++attempt) {
        const bool reused = d->stream.has_value();
        if (!reused)
            d->connect(m_port);
        try {
            return d->exchange(req);
        } catch (const beast::system_error &e) {
            d->stream.reset();
            if (!reused || attempt > 0)
                throw Error("the node's control API at " + d->host + ":" + std::to_string(m_port) + " did not answer " +
                            std::string(method) + " " + std::string(target) + ": " + e.code().message());
        }
    }
}

} // namespace rookery::control
