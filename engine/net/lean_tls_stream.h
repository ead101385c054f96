// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes Boost.Asio and OpenSSL. TLS over a TCP socket, for
// LinkSession<> under Beast's WebSocket, holding no buffer while the link is idle.
//
// Asio's ssl::stream keeps four buffers of 17 KiB for as long as the stream lives (its
// own input and output, and OpenSSL's BIO pair between them): 68 KiB for every link,
// most of what a coordinator spends on an idle volunteer (heaptrack, docs/benchmarks.md).
// Here OpenSSL reads and writes through a BIO of our own over two vectors that exist
// only while bytes are in them: a read waits for the socket to be readable before it
// allocates anything, and what went out is released once the socket has taken it.
// OpenSSL's own record buffers go when empty (SSL_MODE_RELEASE_BUFFERS).
//
// The same surface as asio::ssl::stream where LinkSession uses it (handshake, verify
// mode and callback, native_handle, next_layer), the same error codes (the SSL
// category with OpenSSL's packed error, ssl::error::stream_truncated, error::eof), and
// Beast's teardown. One read and one write may be in flight at once, as Beast's
// WebSocket needs; everything runs on the socket's executor (a strand per link).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/ssl/verify_context.hpp>
#include <boost/asio/ssl/verify_mode.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/system/error_code.hpp>

typedef struct ssl_st SSL;

namespace rookery::net {

namespace detail {

/// The state the operations share, held by shared_ptr: a write to the socket that the
/// stream started on its own (handshake bytes, alerts) may outlive the stream.
struct LeanTlsCore
{
    using error_code = boost::system::error_code;

    LeanTlsCore(boost::asio::ip::tcp::socket s, boost::asio::ssl::context &context);
    ~LeanTlsCore();
    LeanTlsCore(const LeanTlsCore &) = delete;
    LeanTlsCore &operator=(const LeanTlsCore &) = delete;

    /// Plaintext into records, appended to `out` (at most kWriteBatch bytes a call).
    void beginEncrypt();
    void encrypt(const uint8_t *data, size_t bytes, error_code &ec);
    void endEncrypt(error_code &ec);
    /// Records into plaintext while there is some: the bytes written to `into`; 0 with
    /// no error when OpenSSL needs more from the network.
    size_t decrypt(uint8_t *into, size_t bytes, error_code &ec);
    /// One non-blocking read of what the socket holds into `in`; sets `eof`.
    void receive(error_code &ec);
    /// -1: more from the network needed; 0: done; 1: failed (ec set).
    int handshakeStep(error_code &ec);
    void startShutdown();
    /// Hands `out` to the socket unless a write of it is already in flight.
    static void pump(const std::shared_ptr<LeanTlsCore> &self);
    bool flushedUpTo(uint64_t produced) const { return sent >= produced || writeError; }

    error_code errorFor(int sslResult);

    boost::asio::ip::tcp::socket socket;
    SSL *ssl = nullptr;
    /// Never expires: cancelled whenever a write to the socket completes, which wakes
    /// every operation waiting for its bytes to be out.
    boost::asio::steady_timer flushed;
    std::vector<uint8_t> in; ///< from the network, not yet taken by OpenSSL
    size_t inTaken = 0;
    std::vector<uint8_t> out;     ///< records from OpenSSL, not yet handed to the socket
    std::vector<uint8_t> sending; ///< records the socket is writing now
    bool flushing = false;
    bool eof = false;
    uint64_t produced = 0, sent = 0; ///< record bytes: made, and taken by the socket
    error_code writeError;
    std::function<bool(bool, boost::asio::ssl::verify_context &)> verify;
    // The coalescing of small pieces into one record (encrypt).
    size_t batched = 0;

    static constexpr size_t kWriteBatch = 64 * 1024;
    static constexpr size_t kRecordBytes = 16 * 1024;
};

} // namespace detail

class LeanTlsStream
{
public:
    using error_code = boost::system::error_code;
    using next_layer_type = boost::asio::ip::tcp::socket;
    using lowest_layer_type = next_layer_type;
    using executor_type = next_layer_type::executor_type;
    using native_handle_type = SSL *;

    LeanTlsStream(next_layer_type socket, boost::asio::ssl::context &context)
        : m_core(std::make_shared<detail::LeanTlsCore>(std::move(socket), context))
    { }
    LeanTlsStream(const executor_type &executor, boost::asio::ssl::context &context)
        : LeanTlsStream(next_layer_type(executor), context)
    { }

    executor_type get_executor() noexcept { return m_core->socket.get_executor(); }
    next_layer_type &next_layer() { return m_core->socket; }
    const next_layer_type &next_layer() const { return m_core->socket; }
    SSL *native_handle() { return m_core->ssl; }

    void set_verify_mode(boost::asio::ssl::verify_mode mode);
    void set_verify_callback(std::function<bool(bool, boost::asio::ssl::verify_context &)> callback);

    /// Bytes this stream holds in buffers of its own now (not OpenSSL's): 0 on an idle link.
    size_t bufferedCapacity() const
    {
        return m_core->in.capacity() + m_core->out.capacity() + m_core->sending.capacity();
    }

    template <class Token> auto async_handshake(boost::asio::ssl::stream_base::handshake_type type, Token &&token)
    {
        return boost::asio::async_compose<Token, void(error_code)>(HandshakeOp{m_core, type}, token, m_core->socket);
    }

    template <class Buffers, class Token> auto async_read_some(const Buffers &buffers, Token &&token)
    {
        return boost::asio::async_compose<Token, void(error_code, size_t)>(ReadOp<Buffers>{m_core, buffers}, token,
                                                                           m_core->socket);
    }

    template <class Buffers, class Token> auto async_write_some(const Buffers &buffers, Token &&token)
    {
        return boost::asio::async_compose<Token, void(error_code, size_t)>(WriteOp<Buffers>{m_core, buffers}, token,
                                                                           m_core->socket);
    }

    /// Sends close_notify and ends our half of the TCP connection; does not wait for the
    /// peer's close_notify (Beast's close handshake has already happened).
    template <class Token> auto async_shutdown(Token &&token)
    {
        return boost::asio::async_compose<Token, void(error_code)>(ShutdownOp{m_core}, token, m_core->socket);
    }

private:
    using Core = detail::LeanTlsCore;

    struct HandshakeOp
    {
        HandshakeOp(std::shared_ptr<Core> c, boost::asio::ssl::stream_base::handshake_type t)
            : core(std::move(c))
            , type(t)
        { }

        std::shared_ptr<Core> core;
        boost::asio::ssl::stream_base::handshake_type type;
        int state = 0; // 0 start, 3 first step, 1 waited for the socket, 2 flushing
        error_code result;

        template <class Self> void operator()(Self &self, error_code ec = {})
        {
            Core &c = *core;
            if (state == 0) { // never complete inside the initiating call
                state = 3;
                startHandshake(c, type);
                return boost::asio::post(c.socket.get_executor(), std::move(self));
            }
            if (state == 3) {
                state = 1;
            } else if (state == 1) {
                if (ec)
                    return self.complete(ec);
                c.receive(ec);
                if (ec)
                    return self.complete(ec);
            }
            if (state == 1) {
                const int step = c.handshakeStep(result);
                Core::pump(core);
                if (step < 0) {
                    if (!c.eof)
                        return c.socket.async_wait(boost::asio::ip::tcp::socket::wait_read, std::move(self));
                    result = boost::asio::ssl::error::stream_truncated;
                }
                // Done or failed: what OpenSSL wrote (the last flight, or the alert that
                // tells the peer why) goes out first.
                state = 2;
            }
            if (!c.flushedUpTo(c.produced))
                return c.flushed.async_wait(std::move(self));
            if (!result && c.writeError)
                result = c.writeError;
            self.complete(result);
        }
    };

    template <class Buffers> struct ReadOp
    {
        ReadOp(std::shared_ptr<Core> c, const Buffers &b)
            : core(std::move(c))
            , buffers(b)
        { }

        std::shared_ptr<Core> core;
        Buffers buffers;
        int state = 0; // 0 start, 1 waited for the socket, 2 posted to complete
        bool waited = false;
        size_t got = 0;
        error_code result;

        template <class Self> void operator()(Self &self, error_code ec = {})
        {
            Core &c = *core;
            if (state == 2)
                return self.complete(result, got);
            if (state == 1) {
                if (ec)
                    return self.complete(ec, 0);
                c.receive(ec);
                if (ec)
                    return self.complete(ec, 0);
            }
            size_t total = decryptInto(c);
            if (total == 0 && !result && state == 0 && !c.eof) {
                // Bytes may be waiting already (bulk transfers): one read before the wait.
                c.receive(result);
                if (!result)
                    total = decryptInto(c);
            }
            Core::pump(core); // a read can make OpenSSL write (alerts, key updates)
            const bool empty = boost::asio::buffer_size(buffers) == 0;
            if (total == 0 && !result && !empty) {
                if (!c.eof) {
                    waited = true;
                    state = 1;
                    return c.socket.async_wait(boost::asio::ip::tcp::socket::wait_read, std::move(self));
                }
                result = boost::asio::ssl::error::stream_truncated;
            }
            got = total;
            if (waited)
                return self.complete(result, got);
            state = 2; // never complete inside the initiating call
            boost::asio::post(c.socket.get_executor(), std::move(self));
        }

        size_t decryptInto(Core &c)
        {
            size_t total = 0;
            for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers);
                 ++it) {
                const boost::asio::mutable_buffer b = *it;
                if (b.size() == 0)
                    continue;
                const size_t n = c.decrypt(static_cast<uint8_t *>(b.data()), b.size(), result);
                total += n;
                if (result || n < b.size())
                    break;
            }
            return total;
        }
    };

    template <class Buffers> struct WriteOp
    {
        WriteOp(std::shared_ptr<Core> c, const Buffers &b)
            : core(std::move(c))
            , buffers(b)
        { }

        std::shared_ptr<Core> core;
        Buffers buffers;
        int state = 0; // 0 start, 1 waiting for the socket to take the records, 2 posted
        size_t taken = 0;
        uint64_t target = 0;
        error_code result;

        template <class Self> void operator()(Self &self, error_code = {})
        {
            Core &c = *core;
            if (state == 2)
                return self.complete(result, taken);
            if (state == 0) {
                result = c.writeError;
                if (!result) {
                    c.beginEncrypt();
                    for (auto it = boost::asio::buffer_sequence_begin(buffers);
                         it != boost::asio::buffer_sequence_end(buffers) && !result && taken < Core::kWriteBatch;
                         ++it) {
                        const boost::asio::const_buffer b = *it;
                        const size_t n = std::min(b.size(), Core::kWriteBatch - taken);
                        c.encrypt(static_cast<const uint8_t *>(b.data()), n, result);
                        taken += n;
                    }
                    if (!result)
                        c.endEncrypt(result);
                }
                if (result || taken == 0) {
                    if (result)
                        taken = 0;
                    state = 2;
                    return boost::asio::post(c.socket.get_executor(), std::move(self));
                }
                target = c.produced;
                state = 1;
                Core::pump(core);
            }
            if (!c.flushedUpTo(target))
                return c.flushed.async_wait(std::move(self));
            if (c.sent < target)
                return self.complete(c.writeError, 0);
            self.complete({}, taken);
        }
    };

    struct ShutdownOp
    {
        explicit ShutdownOp(std::shared_ptr<Core> c)
            : core(std::move(c))
        { }

        std::shared_ptr<Core> core;
        int state = 0;

        template <class Self> void operator()(Self &self, error_code = {})
        {
            Core &c = *core;
            if (state == 0) {
                state = 1;
                c.startShutdown();
                Core::pump(core);
                if (c.flushedUpTo(c.produced))
                    return boost::asio::post(c.socket.get_executor(), std::move(self));
            }
            if (!c.flushedUpTo(c.produced))
                return c.flushed.async_wait(std::move(self));
            error_code ignored;
            c.socket.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
            self.complete(c.writeError);
        }
    };

    static void startHandshake(Core &c, boost::asio::ssl::stream_base::handshake_type type);

    std::shared_ptr<Core> m_core;
};

// Beast's WebSocket ends a closed connection through these (found by ADL).
void teardown(boost::beast::role_type, LeanTlsStream &stream, boost::system::error_code &ec);

template <class Handler> void async_teardown(boost::beast::role_type, LeanTlsStream &stream, Handler &&handler)
{
    stream.async_shutdown(std::forward<Handler>(handler));
}

} // namespace rookery::net
