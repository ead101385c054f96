// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes Boost.Beast. The per-connection object behind a
// Link, in the shape of Beast's examples: one object per connection owning its stream,
// every handler on the stream's strand and starting with its error check. A template
// over the layer under the WebSocket: TLS over TCP in production (tls_transport.cpp),
// boost::beast::test::stream in tests. Definitions: link_session_impl.h.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "engine/net/lean_tls_stream.h"
#include "engine/net/link.h"
#include "engine/net/tls_credentials.h"

namespace rookery::net {

namespace beast = boost::beast;
namespace asio = boost::asio;
namespace websocket = boost::beast::websocket;

/// TLS over a plain socket: beast::tcp_stream's timeouts cost bookkeeping on every
/// operation (one per TLS record), and the session has its own deadline; and not
/// Asio's ssl::stream, whose fixed buffers cost an idle link 68 KiB (lean_tls_stream.h).
using TlsStream = LeanTlsStream;

enum class Side { Client, Server };

/// Everything a session needs besides its stream.
struct LinkSessionSetup
{
    Side side = Side::Client;
    LinkConfig config;
    LinkEvents events;
    std::string remote;       ///< "host:port" for log lines
    std::string host, port;   ///< client, or through a relay: where to connect (TLS)
    std::string localAddress; ///< client: connect from this address ("": the system's choice)
    /// Through a relay (either side): sent once connected, before TLS; the relay answers
    /// one byte (relay_protocol.h), then the stream is the peer's.
    std::string relayPreamble;
    std::string path = "/rookery";
    PeerCheck check; ///< TLS: how to judge the peer's certificate
    std::shared_ptr<asio::ssl::context> tls;
};

template <class NextLayer>
class LinkSession final : public Link, public std::enable_shared_from_this<LinkSession<NextLayer>>
{
public:
    static constexpr bool kTls = std::is_same_v<NextLayer, TlsStream>;

    /// `streamArgs` construct the NextLayer (TLS: a socket or executor, then the context).
    template <class... Args> explicit LinkSession(LinkSessionSetup setup, Args &&...streamArgs);
    ~LinkSession() override;

    /// Starts connecting (client) or the handshakes (server). Call once.
    void start();

    SendResult send(const Message &message) override;
    void close(const std::string &reason) override;
    bool isOpen() const override { return m_state.load() == State::Open; }
    PeerInfo peer() const override;
    LinkStats stats() const override;
    std::string describe() const override;

    /// The negotiated cipher suite (TLS), for benchmarks and logs.
    std::string cipher() const;

private:
    enum class State { Connecting, Handshaking, Open, Closing, Closed };
    using Self = LinkSession<NextLayer>;
    using Frame = std::shared_ptr<EncodedFrame>;

    std::shared_ptr<Self> self() { return this->shared_from_this(); }

    // Connecting and handshakes (strand).
    void onDeadline(beast::error_code ec);
    void onResolve(beast::error_code ec, asio::ip::tcp::resolver::results_type results);
    void onConnect(beast::error_code ec, asio::ip::tcp::endpoint endpoint);
    void onRelayReply(beast::error_code ec, size_t bytes);
    void startTls();
    void onTlsHandshake(beast::error_code ec);
    void startWebSocket();
    void onWebSocketHandshake(beast::error_code ec);
    void armKeepalive();
    void onKeepalive(beast::error_code ec);
    void onHello(const Hello &hello);
    void onHelloAck(const HelloAck &ack);
    void open(PeerInfo peer);
    void refuse(GoodbyeCode code, const std::string &reason);

    // Reading (strand).
    void readHead();
    void onReadHead(beast::error_code ec, size_t bytes);
    void readBody();
    void onReadBody(beast::error_code ec, size_t bytes);
    void checkMessageEnd();
    void onReadTrailer(beast::error_code ec, size_t bytes);
    void deliverFrame();
    void dispatch(Message &&message);
    void afterFrame(uint64_t frameBytes);

    // Writing (strand).
    bool reserveQueue(size_t bytes);
    void enqueue(Frame frame, size_t reserved);
    void writeNext();
    void startWrite();
    void onWrite(beast::error_code ec, size_t bytes);
    void checkWritable();

    // Closing (strand).
    void closeOnStrand(const std::string &reason);
    void startClose(websocket::close_code code, const std::string &reason);
    void protocolError(WireError error, const std::string &reason);
    void onError(beast::error_code ec, const char *stage);
    size_t dropQueued();
    void finish(CloseInfo info);

    template <class Fn, class... Args> void notify(const Fn &fn, Args &&...args);

    LinkSessionSetup m_setup;
    websocket::stream<NextLayer> m_ws;
    asio::steady_timer m_deadline, m_writeWait, m_readWait, m_keepalive;
    std::optional<asio::ip::tcp::resolver> m_resolver;

    std::atomic<State> m_state{State::Connecting};
    std::atomic<bool> m_closeRequested{false};
    std::atomic<Compression> m_compression{Compression::None};
    bool m_webSocketUp = false;
    bool m_closeStarted = false; ///< async_close issued: its handler finishes
    bool m_finished = false;
    std::string m_verifyFailure;    ///< set by the TLS verify callback
    bool m_verifyOutOfDate = false; ///< ... because of the certificate's dates
    std::string m_certNodeId;       ///< the peer certificate's key fingerprint (TLS)
    std::string m_cipher;
    std::optional<Goodbye> m_peerGoodbye;
    uint64_t m_activity = 0;     ///< bumped by every frame, data or control
    uint64_t m_activitySeen = 0; ///< m_activity at the last keepalive tick
    int m_quietTicks = 0;
    bool m_pinging = false;
    CloseInfo m_closeInfo; ///< reported when a close we started completes

    // Read state: the first bytes of a frame gather in m_staging until its header says
    // how big the frame is; then one buffer of exactly that size takes the rest.
    FrameDecoder m_decoder;
    std::vector<uint8_t> m_staging;
    size_t m_staged = 0;
    size_t m_headerEnd = 0;
    std::shared_ptr<uint8_t> m_frame;
    uint64_t m_frameBytes = 0;
    uint64_t m_have = 0;
    uint8_t m_trailer = 0;
    uint8_t m_relayReply = 0xff;
    // Tensor checksums computed as the bytes arrive, while they are in cache: a second
    // pass over a frame bigger than the cache would cost a third of the decryption.
    std::vector<FrameDecoder::TensorSpan> m_spans;
    std::vector<uint32_t> m_checksums;
    uint64_t m_checked = 0; ///< frame bytes up to which checksums are done
    size_t m_nextSpan = 0;
    void checksumArrived();

    // Write state.
    struct Queued
    {
        Frame frame;
        size_t reserved; ///< bytes booked in m_queuedBytes; 0 for the link's own messages
    };
    std::deque<Queued> m_queue;
    bool m_writing = false;
    bool m_closeAfterDrain = false;
    std::string m_closeReason;
    std::vector<asio::const_buffer> m_writeBuffers;
    std::atomic<size_t> m_queuedBytes{0}, m_queuedMessages{0};
    std::atomic<bool> m_wantWritable{false};

    std::atomic<uint64_t> m_bytesSent{0}, m_bytesReceived{0}, m_messagesSent{0}, m_messagesReceived{0};
    mutable std::mutex m_peerMutex;
    PeerInfo m_peer;
};

} // namespace rookery::net
