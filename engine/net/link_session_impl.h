// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes Boost.Beast. Member definitions of LinkSession<>;
// included by the one file that instantiates each stream type (tls_transport.cpp, and
// the tests for beast::test::stream).
#pragma once

#include <algorithm>
#include <cstring>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/version.h"
#include "engine/net/crc32c.h"
#include "engine/net/link_session.h"
#include "engine/net/relay_protocol.h"
#include "engine/net/tls_context.h"

namespace rookery::net {

namespace detail {

/// The first bytes of every frame land here (link_session_io.h): enough for the whole of
/// an idle link's messages (heartbeats, acks), small because every link keeps it. A
/// larger frame reads its body straight into its own buffer; a larger header grows the
/// staging for that frame only.
inline constexpr size_t kStagingBytes = 2 * 1024;
/// A message goes out in WebSocket frames of this size: each is checksummed just before
/// it is written, and a client masks it into Beast's write buffer of the same size.
inline constexpr size_t kWriteBufferBytes = 256 * 1024;

inline std::shared_ptr<uint8_t> allocateFrame(size_t bytes)
{
    // 64-byte alignment makes the tensors (at 64-byte offsets) aligned for any vector unit.
    auto *p = static_cast<uint8_t *>(::operator new(bytes, std::align_val_t(64)));
    return std::shared_ptr<uint8_t>(p, [](uint8_t *q) { ::operator delete(q, std::align_val_t(64)); });
}

inline std::string shortNodeId(const std::string &id) { return id.size() > 12 ? id.substr(0, 12) : id; }

inline std::string millis(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

inline websocket::close_code closeCodeFor(WireError e)
{
    return e == WireError::LimitExceeded || e == WireError::HeaderTooLarge ? websocket::close_code::too_big
                                                                           : websocket::close_code::protocol_error;
}

inline std::vector<std::string> ourFeatures() { return {std::string(kFeatureFp16), std::string(kFeatureBf16)}; }

inline std::string software() { return "rookery " + std::string(rookery::kVersion); }

} // namespace detail

template <class NextLayer>
template <class... Args>
LinkSession<NextLayer>::LinkSession(LinkSessionSetup setup, Args &&...streamArgs)
    : m_setup(std::move(setup))
    , m_ws(std::forward<Args>(streamArgs)...)
    , m_deadline(m_ws.get_executor())
    , m_writeWait(m_ws.get_executor())
    , m_readWait(m_ws.get_executor())
    , m_keepalive(m_ws.get_executor())
    , m_decoder(m_setup.config.limits)
{
    m_peer.address = m_setup.remote;
}

template <class NextLayer> LinkSession<NextLayer>::~LinkSession() = default;

template <class NextLayer> void LinkSession<NextLayer>::start()
{
    asio::post(m_ws.get_executor(), [self = self()] {
        self->m_deadline.expires_after(self->m_setup.config.handshakeTimeout);
        self->m_deadline.async_wait(beast::bind_front_handler(&Self::onDeadline, self));
        if constexpr (kTls) {
            if (self->m_setup.side == Side::Client || !self->m_setup.relayPreamble.empty()) {
                self->m_resolver.emplace(self->m_ws.get_executor());
                self->m_resolver->async_resolve(self->m_setup.host, self->m_setup.port,
                                                beast::bind_front_handler(&Self::onResolve, self));
                return;
            }
            self->startTls();
        } else {
            self->startWebSocket();
        }
    });
}

template <class NextLayer> void LinkSession<NextLayer>::onDeadline(beast::error_code ec)
{
    if (ec || m_finished || m_state.load() == State::Open)
        return;
    m_closeInfo = {"the handshake did not finish within " + detail::millis(m_setup.config.handshakeTimeout), false,
                   false, false, false};
    finish(m_closeInfo);
}

template <class NextLayer>
void LinkSession<NextLayer>::onResolve(beast::error_code ec, asio::ip::tcp::resolver::results_type results)
{
    if (ec)
        return onError(ec, "resolving the address");
    if constexpr (kTls) {
        auto &tcp = beast::get_lowest_layer(m_ws);
        if (m_setup.localAddress.empty())
            return asio::async_connect(tcp, results, beast::bind_front_handler(&Self::onConnect, self()));
        // From a chosen source address: the first endpoint of its family, from a socket
        // bound to it (async_connect over a range would reopen the socket unbound).
        const auto local = asio::ip::make_address(m_setup.localAddress, ec);
        if (ec)
            return onError(ec, "reading the source address");
        for (const auto &entry : results) {
            const auto remote = entry.endpoint();
            if (remote.address().is_v4() != local.is_v4())
                continue;
            tcp.open(remote.protocol(), ec);
            if (!ec)
                tcp.bind({local, 0}, ec);
            if (ec)
                return onError(ec, "binding to the source address");
            return tcp.async_connect(remote,
                                     [self = self(), remote](beast::error_code e) { self->onConnect(e, remote); });
        }
        onError(asio::error::address_family_not_supported, "connecting from the source address");
    }
}

template <class NextLayer> void LinkSession<NextLayer>::onConnect(beast::error_code ec, asio::ip::tcp::endpoint)
{
    if (ec)
        return onError(ec, "connecting");
    if (m_setup.relayPreamble.empty())
        return startTls();
    if constexpr (kTls) { // the relay: our token, then its answer
        auto &tcp = beast::get_lowest_layer(m_ws);
        asio::async_write(tcp, asio::buffer(m_setup.relayPreamble), [self = self()](beast::error_code e, size_t) {
            if (e)
                return self->onError(e, "writing to the relay");
            asio::async_read(beast::get_lowest_layer(self->m_ws), asio::buffer(&self->m_relayReply, 1),
                             beast::bind_front_handler(&Self::onRelayReply, self));
        });
    }
}

template <class NextLayer> void LinkSession<NextLayer>::onRelayReply(beast::error_code ec, size_t)
{
    if (ec)
        return onError(ec, "waiting for the relay");
    if (m_relayReply != uint8_t(RelayReply::Paired))
        return finish({describeRelayReply(RelayReply(m_relayReply)), true, false, false, false});
    startTls();
}

template <class NextLayer> void LinkSession<NextLayer>::startTls()
{
    if constexpr (kTls) {
        auto &tls = m_ws.next_layer();
        const bool server = m_setup.side == Side::Server;
        beast::error_code ignored; // small frames (pongs, acks) must not wait for Nagle
        beast::get_lowest_layer(m_ws).set_option(asio::ip::tcp::no_delay(true), ignored);
        tls.set_verify_mode(asio::ssl::verify_peer | (server ? asio::ssl::verify_fail_if_no_peer_cert : 0));
        // The callback lives in this session's SSL object, so `this` outlives it.
        tls.set_verify_callback([this](bool preverified, asio::ssl::verify_context &ctx) {
            return verifyPeerCertificate(m_setup.check, preverified, ctx, m_verifyFailure, &m_verifyOutOfDate);
        });
        beast::error_code notAnAddress;
        asio::ip::make_address(m_setup.host, notAnAddress);
        if (!server && notAnAddress) // SNI carries host names only
            SSL_set_tlsext_host_name(tls.native_handle(), m_setup.host.c_str());
        tls.async_handshake(server ? asio::ssl::stream_base::server : asio::ssl::stream_base::client,
                            beast::bind_front_handler(&Self::onTlsHandshake, self()));
    }
}

template <class NextLayer> void LinkSession<NextLayer>::onTlsHandshake(beast::error_code ec)
{
    if (ec)
        return onError(ec, "TLS handshake");
    if constexpr (kTls) {
        m_certNodeId = peerNodeId(m_ws.next_layer().native_handle());
        m_cipher = negotiatedCipher(m_ws.next_layer().native_handle());
    }
    startWebSocket();
}

template <class NextLayer> void LinkSession<NextLayer>::startWebSocket()
{
    m_state = State::Handshaking;
    // Beast's idle timeout re-arms a timer on every read (one per TLS record: a system
    // call each, a tenth of the CPU a bulk transfer costs), so idleness is ours: a
    // coarse tick every half idleTimeout (armKeepalive). Beast keeps the handshake and
    // close timeouts.
    websocket::stream_base::timeout t;
    t.handshake_timeout = m_setup.config.handshakeTimeout;
    t.idle_timeout = websocket::stream_base::none();
    t.keep_alive_pings = false;
    m_ws.set_option(t);
    m_ws.control_callback([this](websocket::frame_type, beast::string_view) { ++m_activity; });
    m_ws.read_message_max(m_setup.config.limits.maxMessageBytes);
    m_ws.auto_fragment(false);
    m_ws.write_buffer_bytes(detail::kWriteBufferBytes);
    m_ws.binary(true);
    auto handler = beast::bind_front_handler(&Self::onWebSocketHandshake, self());
    if (m_setup.side == Side::Client) {
        m_ws.set_option(websocket::stream_base::decorator(
            [](websocket::request_type &req) { req.set(beast::http::field::user_agent, detail::software()); }));
        m_ws.async_handshake(m_setup.host.empty() ? std::string("peer") : m_setup.host + ":" + m_setup.port,
                             m_setup.path, std::move(handler));
    } else {
        m_ws.set_option(websocket::stream_base::decorator(
            [](websocket::response_type &res) { res.set(beast::http::field::server, detail::software()); }));
        m_ws.async_accept(std::move(handler));
    }
}

template <class NextLayer> void LinkSession<NextLayer>::onWebSocketHandshake(beast::error_code ec)
{
    if (ec)
        return onError(ec, "WebSocket handshake");
    m_webSocketUp = true;
    armKeepalive();
    if (m_setup.side == Side::Client) {
        const auto &c = m_setup.config;
        Hello hello{c.minVersion,          c.maxVersion,  c.nodeId,          c.role,
                    detail::ourFeatures(), c.compression, detail::software()};
        enqueue(std::make_shared<EncodedFrame>(encodeFrame(hello)), 0);
    }
    readHead();
}

template <class NextLayer> void LinkSession<NextLayer>::armKeepalive()
{
    m_keepalive.expires_after(m_setup.config.idleTimeout / 2);
    m_keepalive.async_wait(beast::bind_front_handler(&Self::onKeepalive, self()));
}

template <class NextLayer> void LinkSession<NextLayer>::onKeepalive(beast::error_code ec)
{
    if (ec || m_finished || m_closeStarted)
        return;
    const uint64_t seen = m_activity + m_bytesReceived.load();
    if (seen != m_activitySeen) {
        m_activitySeen = seen;
        m_quietTicks = 0;
    } else if (++m_quietTicks >= 2) {
        return finish({"reading timed out: no traffic from the peer for " + detail::millis(m_setup.config.idleTimeout),
                       true, false, false, false});
    } else if (!m_pinging) { // half the time without traffic: ask for some
        m_pinging = true;
        m_ws.async_ping({}, [self = self()](beast::error_code) { self->m_pinging = false; });
    }
    armKeepalive();
}

template <class NextLayer> void LinkSession<NextLayer>::onHello(const Hello &h)
{
    const auto &c = m_setup.config;
    const uint32_t lo = std::max(c.minVersion, h.minVersion), hi = std::min(c.maxVersion, h.maxVersion);
    if (lo > hi)
        return refuse(GoodbyeCode::VersionMismatch,
                      "no common protocol version: this node speaks " + std::to_string(c.minVersion) + ".." +
                          std::to_string(c.maxVersion) + ", the peer " + std::to_string(h.minVersion) + ".." +
                          std::to_string(h.maxVersion));
    if (kTls && h.nodeId != m_certNodeId)
        return refuse(GoodbyeCode::Refused, "the Hello names node " + detail::shortNodeId(h.nodeId) +
                                                " but the certificate is node " + detail::shortNodeId(m_certNodeId));
    const bool offered =
        std::find(h.features.begin(), h.features.end(),
                  h.compression == Compression::Fp16 ? kFeatureFp16 : kFeatureBf16) != h.features.end();
    const Compression agreed =
        c.acceptCompression && h.compression != Compression::None && offered ? h.compression : Compression::None;
    HelloAck ack{hi, c.nodeId, c.role, detail::ourFeatures(), agreed, detail::software()};
    enqueue(std::make_shared<EncodedFrame>(encodeFrame(ack)), 0);
    open(PeerInfo{h.nodeId, m_setup.remote, h.role, hi, agreed, h.features, h.software, m_cipher});
}

template <class NextLayer> void LinkSession<NextLayer>::onHelloAck(const HelloAck &a)
{
    const auto &c = m_setup.config;
    if (a.version < c.minVersion || a.version > c.maxVersion)
        return refuse(GoodbyeCode::VersionMismatch, "the peer chose protocol version " + std::to_string(a.version) +
                                                        ", outside this node's " + std::to_string(c.minVersion) + ".." +
                                                        std::to_string(c.maxVersion));
    if (a.compression != Compression::None && a.compression != c.compression)
        return refuse(GoodbyeCode::ProtocolError, "the peer chose a compression this node did not ask for");
    if (kTls && a.nodeId != m_certNodeId)
        return refuse(GoodbyeCode::Refused, "the HelloAck names node " + detail::shortNodeId(a.nodeId) +
                                                " but the certificate is node " + detail::shortNodeId(m_certNodeId));
    open(PeerInfo{a.nodeId, m_setup.remote, a.role, a.version, a.compression, a.features, a.software, m_cipher});
}

template <class NextLayer> void LinkSession<NextLayer>::open(PeerInfo peer)
{
    m_deadline.cancel();
    m_compression = peer.compression;
    {
        std::lock_guard lock(m_peerMutex);
        m_peer = std::move(peer);
    }
    m_state = State::Open;
    log::info("net", "link " + describe() + " open: protocol " + std::to_string(m_peer.version) + ", compression " +
                         std::string(compressionName(m_peer.compression)) +
                         (m_cipher.empty() ? std::string() : ", " + m_cipher));
    notify(m_setup.events.opened, self());
}

template <class NextLayer> void LinkSession<NextLayer>::refuse(GoodbyeCode code, const std::string &reason)
{
    log::warning("net", "link " + describe() + " refused: " + reason);
    m_closeInfo = {reason, false, false, true, false};
    enqueue(std::make_shared<EncodedFrame>(encodeFrame(Goodbye{code, reason})), 0);
    m_closeAfterDrain = true;
    m_closeReason = reason;
    m_state = State::Closing;
}

template <class NextLayer> PeerInfo LinkSession<NextLayer>::peer() const
{
    std::lock_guard lock(m_peerMutex);
    return m_peer;
}

template <class NextLayer> LinkStats LinkSession<NextLayer>::stats() const
{
    return {m_bytesSent.load(),        m_bytesReceived.load(), m_messagesSent.load(),
            m_messagesReceived.load(), m_queuedBytes.load(),   m_queuedMessages.load()};
}

template <class NextLayer> std::string LinkSession<NextLayer>::describe() const
{
    std::lock_guard lock(m_peerMutex);
    return m_peer.address + (m_peer.nodeId.empty() ? "" : " (node " + detail::shortNodeId(m_peer.nodeId) + ")");
}

template <class NextLayer> std::string LinkSession<NextLayer>::cipher() const { return m_cipher; }

template <class NextLayer>
template <class Fn, class... Args>
void LinkSession<NextLayer>::notify(const Fn &fn, Args &&...args)
{
    if (!fn)
        return;
    try {
        fn(std::forward<Args>(args)...);
    } catch (const std::exception &e) {
        log::error("net", "link " + describe() + ": an event handler threw: " + e.what());
    }
}

} // namespace rookery::net

#include "engine/net/link_session_io.h"
