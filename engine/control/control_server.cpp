// SPDX-License-Identifier: GPL-3.0-or-later
// In the shape of Beast's http server examples: one object per connection owning its
// stream, handlers named on_*, each starting with its error check. One io_context
// thread serves everything, so the handler needs no strand to be called in order.
#include "engine/control/control_server.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/version.h"
#include "engine/control/control_files.h"
#include "engine/net/tcp_listen.h"

namespace rookery::control {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr const char *kArea = "control";
constexpr std::chrono::seconds kReadTimeout{30};

std::string errorBody(const std::string &text) { return nlohmann::json{{"error", text}}.dump(); }

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

std::string percentDecoded(std::string_view text)
{
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '+')
            out += ' ';
        else if (text[i] == '%' && i + 2 < text.size() && hexValue(text[i + 1]) >= 0 && hexValue(text[i + 2]) >= 0) {
            out += char(hexValue(text[i + 1]) * 16 + hexValue(text[i + 2]));
            i += 2;
        } else
            out += text[i];
    }
    return out;
}

std::map<std::string, std::string> parseQuery(std::string_view query)
{
    std::map<std::string, std::string> out;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        const auto eq = pair.find('=');
        if (!pair.empty())
            out[percentDecoded(pair.substr(0, eq))] =
                eq == std::string_view::npos ? std::string() : percentDecoded(pair.substr(eq + 1));
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    }
    return out;
}

bool isLoopback(const asio::ip::address &a)
{
    return a.is_loopback() || (a.is_v6() && a.to_v6().is_v4_mapped() &&
                               asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback());
}

// The Host header's host part names this machine's loopback: "127.0.0.1:7480",
// "localhost", "[::1]:7480". Anything else is a browser talking to a rebound name.
bool loopbackHost(std::string_view host)
{
    if (host.empty())
        return true; // HTTP/1.0 clients may send none
    std::string_view name = host;
    if (name.front() == '[') {
        const auto close = name.find(']');
        name = close == std::string_view::npos ? name : name.substr(1, close - 1);
    } else if (const auto colon = name.rfind(':'); colon != std::string_view::npos) {
        name = name.substr(0, colon);
    }
    if (name == "localhost")
        return true;
    beast::error_code ec;
    const auto address = asio::ip::make_address(std::string(name), ec);
    return !ec && isLoopback(address);
}

class Session;

} // namespace

struct ControlServer::Impl : std::enable_shared_from_this<ControlServer::Impl>
{
    Impl(ControlServerConfig c, Handler h)
        : config(std::move(c))
        , handler(std::move(h))
        , acceptor(ioc)
    { }

    void bind();
    void accept();
    void onAccept(beast::error_code ec, tcp::socket socket);
    bool open(const std::string &path) const
    {
        return std::find(config.openPaths.begin(), config.openPaths.end(), path) != config.openPaths.end();
    }

    ControlServerConfig config;
    Handler handler;
    asio::io_context ioc;
    tcp::acceptor acceptor;
    uint16_t port = 0;
    std::atomic<size_t> connections{0};
    std::vector<std::weak_ptr<Session>> sessions; // the io thread's alone
    std::thread thread;
    std::once_flag stopped;
};

namespace {

class Session final : public std::enable_shared_from_this<Session>
{
public:
    Session(tcp::socket &&socket, std::shared_ptr<ControlServer::Impl> server)
        : m_stream(std::move(socket))
        , m_server(std::move(server))
    {
        ++m_server->connections;
    }
    ~Session() { --m_server->connections; }

    void run() { read(); }

    void abort()
    {
        beast::error_code ignored;
        m_stream.socket().close(ignored);
    }

private:
    void read()
    {
        m_parser.emplace();
        m_parser->header_limit(16 * 1024);
        m_parser->body_limit(64 * 1024);
        m_stream.expires_after(kReadTimeout);
        http::async_read(m_stream, m_buffer, *m_parser,
                         beast::bind_front_handler(&Session::onRead, shared_from_this()));
    }

    void onRead(beast::error_code ec, size_t)
    {
        if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
            ec == asio::error::operation_aborted)
            return close();
        if (ec)
            return respond({400, errorBody("malformed HTTP request: " + ec.message())}, 11, false);
        const auto req = m_parser->release();
        const unsigned version = req.version();
        const bool keep = req.keep_alive();
        const std::string_view target = req.target();
        const auto mark = target.find('?');
        ControlRequest r;
        r.method = std::string(req.method_string());
        r.path = std::string(target.substr(0, mark));
        if (mark != std::string_view::npos)
            r.query = parseQuery(target.substr(mark + 1));
        if (!loopbackHost(req[http::field::host]))
            return respond({403, errorBody("the control API answers only requests addressed to this machine's "
                                           "loopback address")},
                           version, false);
        const bool openPath =
            (req.method() == http::verb::get || req.method() == http::verb::head) && m_server->open(r.path);
        if (!openPath && !authorized(req[http::field::authorization]))
            return respond({401, errorBody("a token is needed: send 'Authorization: Bearer <token>' with the token "
                                           "from the node's data directory (control-token)")},
                           version, keep, true);
        r.body = req.body();
        ControlResponse res;
        try {
            res = m_server->handler(r);
        } catch (const std::exception &e) {
            log::warning(kArea, std::string("request ") + r.method + " " + r.path + " failed: " + e.what());
            res = {500, errorBody(e.what())};
        }
        respond(std::move(res), version, keep, false, req.method() == http::verb::head);
    }

    bool authorized(std::string_view header) const
    {
        constexpr std::string_view kBearer = "Bearer ";
        if (!header.starts_with(kBearer))
            return false;
        return sameToken(header.substr(kBearer.size()), m_server->config.token);
    }

    void respond(ControlResponse r, unsigned version, bool keep, bool challenge = false, bool head = false)
    {
        auto res = std::make_shared<http::response<http::string_body>>(http::status(r.status), version);
        res->set(http::field::server, m_server->config.serverName + " " + kVersion);
        res->set(http::field::content_type, r.contentType);
        res->set(http::field::cache_control, "no-store");
        if (challenge)
            res->set(http::field::www_authenticate, "Bearer realm=\"" + m_server->config.serverName + "\"");
        res->keep_alive(keep);
        res->body() = std::move(r.body);
        res->prepare_payload();
        if (head)
            res->body().clear(); // Content-Length stays that of the GET answer
        http::async_write(m_stream, *res, [self = shared_from_this(), res, keep](beast::error_code ec, size_t) {
            if (ec || !keep)
                return self->close();
            self->read();
        });
    }

    void close()
    {
        beast::error_code ignored;
        m_stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
        m_stream.close();
    }

    beast::tcp_stream m_stream;
    std::shared_ptr<ControlServer::Impl> m_server;
    beast::flat_buffer m_buffer;
    std::optional<http::request_parser<http::string_body>> m_parser;
};

} // namespace

void ControlServer::Impl::bind()
{
    beast::error_code ec;
    const auto address = asio::ip::make_address(config.bindAddress, ec);
    if (ec || !isLoopback(address))
        throw Error("the control API listens on loopback addresses only, not on '" + config.bindAddress + "'");
    if (config.token.empty())
        throw Error("the control API needs a token");
    port = net::listenOn(acceptor, tcp::endpoint(address, config.port), "serve the control API");
}

void ControlServer::Impl::accept()
{
    acceptor.async_accept(ioc, beast::bind_front_handler(&Impl::onAccept, shared_from_this()));
}

void ControlServer::Impl::onAccept(beast::error_code ec, tcp::socket socket)
{
    if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open())
            return;
        log::warning(kArea, "accepting a control connection failed: " + ec.message());
        return accept();
    }
    if (connections.load() >= config.maxConnections) {
        beast::error_code ignored;
        socket.close(ignored);
    } else {
        auto session = std::make_shared<Session>(std::move(socket), shared_from_this());
        std::erase_if(sessions, [](const auto &w) { return w.expired(); });
        sessions.push_back(session);
        session->run();
    }
    accept();
}

ControlServer::ControlServer(ControlServerConfig config, Handler handler)
    : m(std::make_shared<Impl>(std::move(config), std::move(handler)))
{
    m->bind();
    m->accept();
    m->thread = std::thread([impl = m] { impl->ioc.run(); });
}

ControlServer::~ControlServer() { stop(); }

uint16_t ControlServer::port() const { return m->port; }

void ControlServer::stop()
{
    std::call_once(m->stopped, [this] {
        // With the acceptor and every socket closed, each pending operation completes
        // with an error, no handler starts another, and run() returns by itself.
        asio::post(m->ioc, [impl = m] {
            beast::error_code ignored;
            impl->acceptor.close(ignored);
            for (const auto &w : impl->sessions)
                if (const auto session = w.lock())
                    session->abort();
        });
        if (m->thread.joinable())
            m->thread.join();
    });
}

} // namespace rookery::control
