// SPDX-License-Identifier: GPL-3.0-or-later
// The production transport: LinkSession<> over TLS over TCP, the listener that accepts
// such links and the dialled link that keeps reconnecting.
#include "engine/net/dialer.h"
#include "engine/net/listener.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/net/link_session_impl.h"
#include "engine/net/net_context_impl.h"
#include "engine/net/relay_protocol.h"
#include "engine/net/tcp_listen.h"
#include "engine/net/tls_context.h"

namespace rookery::net {

template class LinkSession<TlsStream>;
using TlsLinkSession = LinkSession<TlsStream>;

// ---- Listener --------------------------------------------------------------------

struct Listener::Impl : std::enable_shared_from_this<Listener::Impl>
{
    Impl(NetContext::Impl &context, ListenerConfig c, LinkEvents e)
        : net(context)
        , config(std::move(c))
        , events(std::move(e))
        , tls(makeTlsContext(config.credentials, true))
        , acceptor(context.connectionExecutor())
    { }

    void bind()
    {
        port = listenOn(acceptor, {bindAddress(config.bindAddress, "listen"), config.port}, "listen");
        log::info("net", "listening on " + endpointText(acceptor.local_endpoint()));
    }

    void accept()
    {
        acceptor.async_accept(net.connectionExecutor(), beast::bind_front_handler(&Impl::onAccept, shared_from_this()));
    }

    void onAccept(beast::error_code ec, asio::ip::tcp::socket socket)
    {
        if (ec) {
            if (ec == asio::error::operation_aborted || stopped)
                return;
            log::warning("net", "accepting a connection failed: " + ec.message());
            return accept();
        }
        beast::error_code ignored;
        const auto remote = socket.remote_endpoint(ignored);
        if (const auto why = admit(remote.address()); !why.empty()) {
            // Counted (counters()); a flood would otherwise write a line per connection.
            log::debug("net", "refusing " + endpointText(remote) + ": " + why);
            socket.close(ignored);
            return accept();
        }
        LinkSessionSetup s;
        s.side = Side::Server;
        s.config = config.link;
        s.events = linkEvents();
        s.remote = endpointText(remote);
        s.check = config.clients;
        std::shared_ptr<asio::ssl::context> tls;
        {
            std::lock_guard lock(mutex);
            tls = this->tls;
        }
        s.tls = tls;
        auto session = std::make_shared<TlsLinkSession>(std::move(s), std::move(socket), *tls);
        {
            std::lock_guard lock(mutex);
            links.push_back({session, remote.address()});
            ++tally.accepted;
        }
        session->start();
        accept();
    }

    // The user's events, minus `closed` for links that never opened.
    LinkEvents linkEvents()
    {
        LinkEvents e = events;
        std::weak_ptr<Impl> weak = shared_from_this();
        e.closed = [weak, user = events.closed](const std::shared_ptr<Link> &link, const CloseInfo &info) {
            auto self = weak.lock();
            if (self) {
                std::lock_guard lock(self->mutex);
                std::erase_if(self->links, [&](const auto &w) { return w.link.expired() || w.link.lock() == link; });
            }
            if (user && !link->peer().software.empty()) // software is set by the Hello exchange
                user(link, info);
        };
        return e;
    }

    size_t linkCount()
    {
        std::lock_guard lock(mutex);
        std::erase_if(links, [](const auto &w) { return w.link.expired(); });
        return links.size();
    }

    // "" when a connection from `address` may come in; else why not (and counted).
    std::string admit(const asio::ip::address &address)
    {
        std::lock_guard lock(mutex);
        std::erase_if(links, [](const auto &w) { return w.link.expired(); });
        if (links.size() >= config.maxLinks) {
            ++tally.refusedFull;
            return "already " + std::to_string(config.maxLinks) + " links";
        }
        if (config.maxLinksPerAddress > 0) {
            const auto same =
                size_t(std::count_if(links.begin(), links.end(), [&](const auto &w) { return w.address == address; }));
            if (same >= config.maxLinksPerAddress) {
                ++tally.refusedPerAddress;
                return "already " + std::to_string(same) + " links from that address";
            }
        }
        return {};
    }

    void stop()
    {
        if (stopped.exchange(true))
            return;
        asio::post(acceptor.get_executor(), [self = shared_from_this()] {
            beast::error_code ignored;
            self->acceptor.close(ignored);
        });
        std::vector<Entry> all;
        {
            std::lock_guard lock(mutex);
            all = links;
        }
        for (auto &w : all)
            if (auto l = w.link.lock())
                l->close("the listener stopped");
    }

    NetContext::Impl &net;
    ListenerConfig config;
    LinkEvents events;
    std::shared_ptr<asio::ssl::context> tls; // under `mutex` once accepting
    asio::ip::tcp::acceptor acceptor;
    uint16_t port = 0;
    std::atomic<bool> stopped{false};
    struct Entry
    {
        std::weak_ptr<Link> link;
        asio::ip::address address;
    };
    std::mutex mutex;
    std::vector<Entry> links;
    ListenerCounters tally;
};

Listener::Listener(NetContext &context, ListenerConfig config, LinkEvents events)
    : m(std::make_shared<Impl>(context.impl(), std::move(config), std::move(events)))
{
    m->bind();
    asio::post(m->acceptor.get_executor(), [impl = m] { impl->accept(); });
}

Listener::~Listener() { stop(); }
uint16_t Listener::port() const { return m->port; }
void Listener::stop() { m->stop(); }
size_t Listener::linkCount() const { return m->linkCount(); }

ListenerCounters Listener::counters() const
{
    std::lock_guard lock(m->mutex);
    return m->tally;
}

void Listener::setCredentials(const TlsCredentials &credentials)
{
    auto tls = makeTlsContext(credentials, true);
    std::lock_guard lock(m->mutex);
    m->tls = std::move(tls);
    m->config.credentials = credentials;
}

// ---- Dialled links ---------------------------------------------------------------

namespace {

class DialedLink final : public Link, public std::enable_shared_from_this<DialedLink>
{
public:
    DialedLink(NetContext::Impl &net, DialConfig config, LinkEvents events)
        : m_net(net)
        , m_config(std::move(config))
        , m_events(std::move(events))
        , m_tls(makeTlsContext(m_config.credentials, false))
        , m_retry(asio::make_strand(net.ioc))
        , m_random(std::random_device{}())
    { }

    void connect()
    {
        LinkSessionSetup s;
        s.side = Side::Client;
        s.config = m_config.link;
        s.remote = m_config.host + ":" + std::to_string(m_config.port);
        s.host = m_config.host;
        s.port = std::to_string(m_config.port);
        s.localAddress = m_config.localAddress;
        s.path = m_config.path;
        s.check = m_config.server;
        s.tls = m_tls;
        std::weak_ptr<DialedLink> weak = shared_from_this();
        s.events.opened = [weak](const std::shared_ptr<Link> &) {
            if (auto self = weak.lock()) {
                {
                    std::lock_guard lock(self->m_mutex);
                    self->m_openedAt = std::chrono::steady_clock::now();
                }
                if (self->m_events.opened)
                    self->m_events.opened(self);
            }
        };
        s.events.message = [weak](const std::shared_ptr<Link> &, Message &&m) {
            if (auto self = weak.lock(); self && self->m_events.message)
                self->m_events.message(self, std::move(m));
        };
        s.events.writable = [weak](const std::shared_ptr<Link> &) {
            if (auto self = weak.lock(); self && self->m_events.writable)
                self->m_events.writable(self);
        };
        s.events.closed = [weak](const std::shared_ptr<Link> &, const CloseInfo &info) {
            if (auto self = weak.lock())
                self->onClosed(info);
        };
        auto session = std::make_shared<TlsLinkSession>(std::move(s), m_net.connectionExecutor(), *m_tls);
        {
            std::lock_guard lock(m_mutex);
            if (m_closed)
                return;
            m_session = session;
        }
        session->start();
    }

    SendResult send(const Message &message) override
    {
        auto s = current();
        return s ? s->send(message) : SendResult::NotOpen;
    }

    void close(const std::string &reason) override
    {
        std::shared_ptr<TlsLinkSession> s;
        {
            std::lock_guard lock(m_mutex);
            if (m_closed)
                return;
            m_closed = true;
            s = m_session;
        }
        asio::post(m_retry.get_executor(), [self = shared_from_this()] { self->m_retry.cancel(); });
        if (s)
            s->close(reason);
    }

    bool isOpen() const override
    {
        auto s = current();
        return s && s->isOpen();
    }
    PeerInfo peer() const override
    {
        auto s = current();
        return s ? s->peer() : PeerInfo{};
    }
    LinkStats stats() const override
    {
        auto s = current();
        return s ? s->stats() : LinkStats{};
    }
    std::string describe() const override
    {
        auto s = current();
        return s ? s->describe() : m_config.host + ":" + std::to_string(m_config.port);
    }

private:
    std::shared_ptr<TlsLinkSession> current() const
    {
        std::lock_guard lock(m_mutex);
        return m_session;
    }

    void onClosed(CloseInfo info)
    {
        std::chrono::milliseconds delay{0};
        {
            std::lock_guard lock(m_mutex);
            info.reconnecting = m_config.reconnect && !m_closed && !info.fatal;
            if (m_openedAt && std::chrono::steady_clock::now() - *m_openedAt >= m_config.stableAfter)
                m_attempt = 0; // it was up a good while: this is a new outage
            m_openedAt.reset();
            if (info.reconnecting) {
                // Exponential back-off with jitter in [50%, 100%], so that a swarm whose
                // coordinator restarts does not reconnect in lockstep.
                const auto cap =
                    std::min(m_config.maxBackoff.count(), m_config.initialBackoff.count() << std::min(m_attempt, 20));
                delay = std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(cap / 2, cap)(m_random));
                ++m_attempt;
            }
        }
        if (m_events.closed)
            m_events.closed(shared_from_this(), info);
        if (!info.reconnecting)
            return;
        log::info("net", "link " + describe() + ": reconnecting in " + std::to_string(delay.count()) + " ms");
        asio::post(m_retry.get_executor(), [self = shared_from_this(), delay] {
            self->m_retry.expires_after(delay);
            self->m_retry.async_wait([self](beast::error_code ec) {
                if (!ec)
                    self->connect();
            });
        });
    }

    NetContext::Impl &m_net;
    DialConfig m_config;
    LinkEvents m_events;
    std::shared_ptr<asio::ssl::context> m_tls;
    asio::steady_timer m_retry;
    std::mt19937_64 m_random;
    int m_attempt = 0; // closes since the last link that stayed open (m_config.stableAfter)
    mutable std::mutex m_mutex;
    std::optional<std::chrono::steady_clock::time_point> m_openedAt; // the link open now
    bool m_closed = false;
    std::shared_ptr<TlsLinkSession> m_session;
};

} // namespace

std::shared_ptr<Link> dialRelayed(NetContext &context, RelayedDialConfig config, LinkEvents events)
{
    auto &net = context.impl();
    LinkSessionSetup s;
    s.side = config.accept ? Side::Server : Side::Client;
    s.config = std::move(config.link);
    s.events = std::move(events);
    s.remote = "relay " + config.host + ":" + std::to_string(config.port);
    s.host = config.host;
    s.port = std::to_string(config.port);
    s.path = config.path;
    s.check = std::move(config.peer);
    s.relayPreamble = relayPreamble(config.token);
    s.tls = makeTlsContext(config.credentials, config.accept);
    auto tls = s.tls;
    auto session = std::make_shared<TlsLinkSession>(std::move(s), net.connectionExecutor(), *tls);
    session->start();
    return session;
}

DialConfig coordinatorDialConfig(const CoordinatorAddress &address, TlsCredentials credentials, LinkConfig link)
{
    DialConfig c;
    c.host = address.host;
    c.port = address.port;
    c.path = address.path;
    c.credentials = std::move(credentials);
    c.server.kind = PeerCheck::Kind::PinnedCertificate;
    c.server.sha256 = address.sha256;
    c.link = std::move(link);
    return c;
}

std::shared_ptr<Link> dial(NetContext &context, DialConfig config, LinkEvents events)
{
    auto link = std::make_shared<DialedLink>(context.impl(), std::move(config), std::move(events));
    link->connect();
    return link;
}

} // namespace rookery::net
