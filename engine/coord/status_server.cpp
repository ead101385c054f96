// SPDX-License-Identifier: GPL-3.0-or-later
// The status API in the shape of Beast's advanced server examples: one object per
// connection owning its stream, every handler on that connection's strand and starting
// with its error check; a WebSocket feed session takes the stream over after the upgrade.
#include "engine/coord/status_server.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/secret_token.h"
#include "engine/common/version.h"
#include "engine/net/net_context_impl.h"
#include "engine/net/tcp_listen.h"
#include "engine/net/tls_context.h"

namespace rookery::coord {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Stream = beast::ssl_stream<beast::tcp_stream>;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char *kArea = "status";
constexpr std::chrono::seconds kReadTimeout{30};
constexpr std::chrono::milliseconds kMinFeedGap{200}; // changes closer than this are coalesced

std::string errorBody(const std::string &text) { return nlohmann::json{{"error", text}}.dump(); }

// Something the server can close when it stops.
struct Closable
{
    virtual ~Closable() = default;
    virtual void abort() = 0;
};

} // namespace

struct StatusServer::Impl : std::enable_shared_from_this<StatusServer::Impl>
{
    Impl(asio::io_context &io, StatusServerConfig c, Source s, MetricsSource ms)
        : ioc(io)
        , config(std::move(c))
        , source(std::move(s))
        , metrics(std::move(ms))
        , tls(net::makeTlsContext(config.credentials, true))
        , acceptor(asio::make_strand(io))
    { }

    void bind();
    void accept();
    void onAccept(beast::error_code ec, tcp::socket socket);
    void track(const std::shared_ptr<Closable> &c, const std::string &address)
    {
        std::lock_guard lock(mutex);
        std::erase_if(connections, [](const auto &t) { return t.connection.expired(); });
        connections.push_back({c, address});
    }
    /// Connections open now, and how many of them come from `address`.
    std::pair<size_t, size_t> count(const std::string &address)
    {
        std::lock_guard lock(mutex);
        std::erase_if(connections, [](const auto &t) { return t.connection.expired(); });
        const auto fromThere = size_t(
            std::count_if(connections.begin(), connections.end(), [&](const auto &t) { return t.address == address; }));
        return {connections.size(), fromThere};
    }
    void stop();

    asio::io_context &ioc;
    StatusServerConfig config;
    Source source;
    MetricsSource metrics;
    std::shared_ptr<asio::ssl::context> tls;
    tcp::acceptor acceptor;
    uint16_t port = 0;
    std::atomic<bool> stopped{false};
    std::mutex mutex;
    struct Tracked
    {
        std::weak_ptr<Closable> connection;
        std::string address; ///< the client's IP address
    };
    std::vector<Tracked> connections;
    uint64_t refusedPerAddress = 0;
};

namespace {

// ---- The WebSocket feed ----------------------------------------------------------

class FeedSession final : public Closable, public std::enable_shared_from_this<FeedSession>
{
public:
    FeedSession(Stream &&stream, std::shared_ptr<StatusServer::Impl> server, bool full)
        : m_ws(std::move(stream))
        , m_timer(m_ws.get_executor())
        , m_server(std::move(server))
        , m_full(full)
    { }

    void run(http::request<http::string_body> req)
    {
        beast::get_lowest_layer(m_ws).expires_never();
        m_ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
        m_ws.read_message_max(4096); // clients have nothing to say
        m_endsAt = Clock::now() + m_server->config.feedLifetime;
        m_ws.set_option(websocket::stream_base::decorator([](websocket::response_type &res) {
            res.set(http::field::server, std::string("rookery-coordinator ") + kVersion);
        }));
        m_ws.async_accept(req, beast::bind_front_handler(&FeedSession::onAccept, shared_from_this()));
    }

    void abort() override
    {
        asio::post(m_ws.get_executor(), [self = shared_from_this()] {
            self->m_timer.cancel();
            beast::error_code ignored;
            beast::get_lowest_layer(self->m_ws).socket().close(ignored);
        });
    }

private:
    void onAccept(beast::error_code ec)
    {
        if (ec)
            return log::debug(kArea, "feed handshake failed: " + ec.message());
        m_ws.text(true);
        send(m_server->source(view()));
        read();
        tick();
    }

    void read()
    {
        m_ws.async_read(m_in, [self = shared_from_this()](beast::error_code ec, size_t) {
            if (ec) { // closed by the client, or the connection broke
                self->m_timer.cancel();
                return;
            }
            self->m_in.consume(self->m_in.size()); // clients have nothing to say
            self->read();
        });
    }

    void tick()
    {
        m_timer.expires_after(std::min(m_server->config.feedInterval, kMinFeedGap));
        m_timer.async_wait([self = shared_from_this()](beast::error_code ec) {
            if (ec)
                return;
            if (Clock::now() >= self->m_endsAt)
                return self->end();
            const auto since = Clock::now() - self->m_lastSent;
            StatusDocument doc = self->m_server->source(self->view());
            if ((doc.version != self->m_sentVersion && since >= kMinFeedGap) ||
                since >= self->m_server->config.feedInterval)
                self->send(std::move(doc));
            self->tick();
        });
    }

    // Its lifetime is over: a close frame once no write is under way (the next tick
    // tries again), then the client connects again if it wants more.
    void end()
    {
        if (m_writing) {
            m_endsAt = Clock::now(); // stays due
            return tick();
        }
        m_writing = true;
        m_ws.async_close(
            websocket::close_reason(websocket::close_code::going_away, "this feed's lifetime is over: connect again"),
            [self = shared_from_this()](beast::error_code) { self->m_timer.cancel(); });
    }

    void send(StatusDocument doc)
    {
        if (m_writing || !doc.json)
            return; // the next tick sends the newest
        m_writing = true;
        m_sentVersion = doc.version;
        m_lastSent = Clock::now();
        m_out = std::move(doc.json);
        m_ws.async_write(asio::buffer(*m_out), [self = shared_from_this()](beast::error_code ec, size_t) {
            self->m_writing = false;
            if (ec)
                self->m_timer.cancel();
        });
    }

    websocket::stream<Stream> m_ws;
    asio::steady_timer m_timer;
    StatusView view() const { return m_full ? StatusView::Full : StatusView::Public; }

    std::shared_ptr<StatusServer::Impl> m_server;
    const bool m_full; // the operator's view
    beast::flat_buffer m_in;
    std::shared_ptr<const std::string> m_out;
    bool m_writing = false;
    uint64_t m_sentVersion = ~uint64_t(0);
    Clock::time_point m_lastSent;
    Clock::time_point m_endsAt;
};

// ---- HTTPS requests --------------------------------------------------------------

class HttpSession final : public Closable, public std::enable_shared_from_this<HttpSession>
{
public:
    HttpSession(tcp::socket &&socket, std::shared_ptr<StatusServer::Impl> server, std::string address)
        : m_stream(std::move(socket), *server->tls)
        , m_server(std::move(server))
        , m_address(std::move(address))
    { }

    void run()
    {
        asio::dispatch(m_stream.get_executor(), [self = shared_from_this()] {
            beast::get_lowest_layer(self->m_stream).expires_after(kReadTimeout);
            self->m_stream.async_handshake(asio::ssl::stream_base::server,
                                           beast::bind_front_handler(&HttpSession::onHandshake, self));
        });
    }

    void abort() override
    {
        asio::post(m_stream.get_executor(), [self = shared_from_this()] {
            beast::error_code ignored;
            beast::get_lowest_layer(self->m_stream).socket().close(ignored);
        });
    }

private:
    void onHandshake(beast::error_code ec)
    {
        if (ec)
            return log::debug(kArea, "TLS handshake failed: " + net::describeTlsError(ec));
        read();
    }

    void read()
    {
        m_parser.emplace();
        m_parser->header_limit(16 * 1024);
        m_parser->body_limit(64 * 1024);
        beast::get_lowest_layer(m_stream).expires_after(kReadTimeout);
        http::async_read(m_stream, m_buffer, *m_parser,
                         beast::bind_front_handler(&HttpSession::onRead, shared_from_this()));
    }

    void onRead(beast::error_code ec, size_t)
    {
        if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
            ec == asio::ssl::error::stream_truncated)
            return close();
        if (ec) // Beast names what it could not parse: "bad method", "bad target", ...
            return respond(http::status::bad_request, errorBody("malformed HTTP request: " + ec.message()), 11, false);
        auto req = m_parser->release();
        const std::string target(req.target());
        const std::string path = target.substr(0, target.find('?'));
        const auto access = accessOf(req);
        if (access == Access::Refused)
            return respond(http::status::unauthorized,
                           errorBody(m_server->config.operatorToken.empty()
                                         ? "this coordinator gives no full view: send no Authorization header"
                                         : "the operator token does not match: send 'Authorization: Bearer <token>' "
                                           "with the token in the coordinator's data directory (operator-token), or "
                                           "no Authorization header for the public view"),
                           req.version(), false);
        const bool full = access == Access::Full;
        if (websocket::is_upgrade(req)) {
            if (path != "/v1/status/feed")
                return respond(http::status::not_found,
                               errorBody("no WebSocket at '" + path + "'; the feed is /v1/status/feed"), req.version(),
                               false);
            auto feed = std::make_shared<FeedSession>(std::move(m_stream), m_server, full);
            m_server->track(feed, m_address);
            return feed->run(std::move(req));
        }
        const unsigned v = req.version();
        const bool keep = req.keep_alive();
        if (req.method() != http::verb::get && req.method() != http::verb::head)
            return respond(
                http::status::method_not_allowed,
                errorBody("method " + std::string(req.method_string()) + " is not allowed: the API is read-only (GET)"),
                v, keep);
        if (path == "/v1/status") {
            const auto doc = m_server->source(full ? StatusView::Full : StatusView::Public);
            return respond(http::status::ok, doc.json ? *doc.json : "{}", v, keep);
        }
        if (path == "/v1/status/feed")
            return respond(http::status::bad_request,
                           errorBody("/v1/status/feed is a WebSocket: send an Upgrade request"), v, keep);
        if (path == "/metrics" && m_server->metrics)
            return respond(http::status::ok, m_server->metrics(), v, keep, "text/plain; version=0.0.4; charset=utf-8");
        if (path == "/") {
            nlohmann::json endpoints = {"/v1/status", "/v1/status/feed"};
            if (m_server->metrics)
                endpoints.push_back("/metrics");
            return respond(http::status::ok, nlohmann::json{{"endpoints", endpoints}}.dump(), v, keep);
        }
        respond(http::status::not_found, errorBody("no such path '" + path + "'; try /v1/status or /v1/status/feed"), v,
                keep);
    }

    enum class Access { Public, Full, Refused };

    Access accessOf(const http::request<http::string_body> &req) const
    {
        const auto it = req.find(http::field::authorization);
        if (it == req.end())
            return Access::Public;
        constexpr std::string_view kBearer = "Bearer ";
        const std::string_view header(it->value().data(), it->value().size());
        const auto &token = m_server->config.operatorToken;
        if (token.empty() || header.substr(0, kBearer.size()) != kBearer ||
            !sameToken(header.substr(kBearer.size()), token))
            return Access::Refused;
        return Access::Full;
    }

    void respond(http::status status, std::string body, unsigned version, bool keep,
                 const char *type = "application/json")
    {
        auto res = std::make_shared<http::response<http::string_body>>(status, version);
        res->set(http::field::server, std::string("rookery-coordinator ") + kVersion);
        res->set(http::field::content_type, type);
        res->set(http::field::cache_control, "no-store");
        res->keep_alive(keep);
        res->body() = std::move(body);
        res->prepare_payload();
        http::async_write(m_stream, *res, [self = shared_from_this(), res, keep](beast::error_code ec, size_t) {
            if (ec || !keep)
                return self->close();
            self->read();
        });
    }

    void close()
    {
        beast::get_lowest_layer(m_stream).expires_after(std::chrono::seconds(5));
        m_stream.async_shutdown([self = shared_from_this()](beast::error_code) {
            beast::error_code ignored;
            beast::get_lowest_layer(self->m_stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
        });
    }

    Stream m_stream;
    std::shared_ptr<StatusServer::Impl> m_server;
    std::string m_address;
    beast::flat_buffer m_buffer;
    std::optional<http::request_parser<http::string_body>> m_parser;
};

} // namespace

void StatusServer::Impl::bind()
{
    const std::string what = "serve the status API";
    port = net::listenOn(acceptor, tcp::endpoint(net::bindAddress(config.bindAddress, what), config.port), what);
}

void StatusServer::Impl::accept()
{
    acceptor.async_accept(asio::make_strand(ioc), beast::bind_front_handler(&Impl::onAccept, shared_from_this()));
}

void StatusServer::Impl::onAccept(beast::error_code ec, tcp::socket socket)
{
    if (ec) {
        if (ec == asio::error::operation_aborted || stopped)
            return;
        log::warning(kArea, "accepting a status connection failed: " + ec.message());
        return accept();
    }
    beast::error_code noPeer;
    const auto remote = socket.remote_endpoint(noPeer);
    const std::string address = noPeer ? std::string() : remote.address().to_string();
    const auto [open, fromThere] = count(address);
    const bool addressFull = config.maxConnectionsPerAddress > 0 && fromThere >= config.maxConnectionsPerAddress;
    if (open >= config.maxConnections || addressFull) {
        if (addressFull && (++refusedPerAddress == 1 || refusedPerAddress % 1000 == 0))
            log::warning(kArea, "refused a status connection from " + address + ": it has " +
                                    std::to_string(fromThere) + " open already (" + std::to_string(refusedPerAddress) +
                                    " refused so far)");
        beast::error_code ignored;
        socket.close(ignored);
        return accept();
    }
    auto session = std::make_shared<HttpSession>(std::move(socket), shared_from_this(), address);
    track(session, address);
    session->run();
    accept();
}

void StatusServer::Impl::stop()
{
    if (stopped.exchange(true))
        return;
    asio::post(acceptor.get_executor(), [self = shared_from_this()] {
        beast::error_code ignored;
        self->acceptor.close(ignored);
    });
    std::vector<Tracked> all;
    {
        std::lock_guard lock(mutex);
        all = connections;
    }
    for (auto &t : all)
        if (auto c = t.connection.lock())
            c->abort();
}

StatusServer::StatusServer(net::NetContext &context, StatusServerConfig config, Source source, MetricsSource metrics)
    : m(std::make_shared<Impl>(context.impl().ioc, std::move(config), std::move(source), std::move(metrics)))
{
    m->bind();
    asio::post(m->acceptor.get_executor(), [impl = m] { impl->accept(); });
}

StatusServer::~StatusServer() { stop(); }
uint16_t StatusServer::port() const { return m->port; }
void StatusServer::stop() { m->stop(); }

} // namespace rookery::coord
