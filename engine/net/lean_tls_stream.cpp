// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/lean_tls_stream.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include <boost/asio/write.hpp>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "engine/common/error.h"

namespace rookery::net {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

/// An emptied vector goes back to the allocator: an idle link holds nothing, and
/// 10,000 idle links hold nothing times 10,000.
void release(std::vector<uint8_t> &v) { std::vector<uint8_t>().swap(v); }

detail::LeanTlsCore *coreOf(BIO *bio) { return static_cast<detail::LeanTlsCore *>(BIO_get_data(bio)); }

int bioWrite(BIO *bio, const char *data, int bytes)
{
    auto *c = coreOf(bio);
    BIO_clear_retry_flags(bio);
    c->out.insert(c->out.end(), reinterpret_cast<const uint8_t *>(data),
                  reinterpret_cast<const uint8_t *>(data) + bytes);
    c->produced += uint64_t(bytes);
    return bytes;
}

int bioRead(BIO *bio, char *into, int bytes)
{
    auto *c = coreOf(bio);
    BIO_clear_retry_flags(bio);
    const size_t have = c->in.size() - c->inTaken;
    if (have == 0) {
        // The end of the stream is the stream's to report (stream_truncated, as Asio):
        // to OpenSSL it is only "not yet".
        BIO_set_retry_read(bio);
        return -1;
    }
    const size_t n = std::min(have, size_t(bytes));
    std::memcpy(into, c->in.data() + c->inTaken, n);
    c->inTaken += n;
    if (c->inTaken == c->in.size()) {
        release(c->in);
        c->inTaken = 0;
    }
    return int(n);
}

long bioCtrl(BIO *bio, int cmd, long, void *)
{
    auto *c = coreOf(bio);
    switch (cmd) {
    case BIO_CTRL_FLUSH:
    case BIO_CTRL_DUP:
        return 1;
    case BIO_CTRL_PENDING:
        return long(c->in.size() - c->inTaken);
    case BIO_CTRL_WPENDING:
        return long(c->out.size());
    default:
        return 0;
    }
}

int bioCreate(BIO *bio)
{
    BIO_set_init(bio, 1);
    return 1;
}

int bioDestroy(BIO *) { return 1; }

const BIO_METHOD *bioMethod()
{
    static BIO_METHOD *method = [] {
        BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rookery lean TLS");
        if (!m || !BIO_meth_set_write(m, bioWrite) || !BIO_meth_set_read(m, bioRead) ||
            !BIO_meth_set_ctrl(m, bioCtrl) || !BIO_meth_set_create(m, bioCreate) ||
            !BIO_meth_set_destroy(m, bioDestroy))
            throw Error("OpenSSL could not make a BIO method (out of memory?)");
        return m;
    }();
    return method;
}

int verifyTrampoline(int preverified, X509_STORE_CTX *ctx)
{
    SSL *ssl = static_cast<SSL *>(X509_STORE_CTX_get_ex_data(ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
    auto *c = ssl ? static_cast<detail::LeanTlsCore *>(SSL_get_app_data(ssl)) : nullptr;
    if (!c || !c->verify)
        return preverified;
    asio::ssl::verify_context vc(ctx);
    return c->verify(preverified != 0, vc) ? 1 : 0;
}

// The coalescing buffer of encrypt(): used within one call, so one per thread will do.
thread_local std::array<uint8_t, detail::LeanTlsCore::kRecordBytes> t_batch;

} // namespace

namespace detail {

LeanTlsCore::LeanTlsCore(asio::ip::tcp::socket s, asio::ssl::context &context)
    : socket(std::move(s))
    , flushed(socket.get_executor())
{
    flushed.expires_at(asio::steady_timer::time_point::max());
    ssl = SSL_new(context.native_handle());
    BIO *bio = ssl ? BIO_new(bioMethod()) : nullptr;
    if (!bio) {
        SSL_free(ssl);
        throw Error("OpenSSL could not make a TLS session (out of memory?)");
    }
    BIO_set_data(bio, this);
    SSL_set_bio(ssl, bio, bio); // one reference, both directions
    SSL_set_app_data(ssl, this);
    SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
}

LeanTlsCore::~LeanTlsCore() { SSL_free(ssl); }

error_code LeanTlsCore::errorFor(int sslResult)
{
    const int kind = SSL_get_error(ssl, sslResult);
    if (kind == SSL_ERROR_ZERO_RETURN)
        return asio::error::eof;
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e != 0)
        return {static_cast<int>(e), asio::error::get_ssl_category()};
    return asio::ssl::error::stream_truncated;
}

void LeanTlsCore::beginEncrypt() { batched = 0; }

void LeanTlsCore::encrypt(const uint8_t *data, size_t bytes, error_code &ec)
{
    // Small pieces (a WebSocket header, a heartbeat) share a record; large ones are
    // encrypted where they lie.
    auto write = [&](const uint8_t *p, size_t n) {
        ERR_clear_error();
        const int r = SSL_write(ssl, p, int(n));
        if (r <= 0)
            ec = errorFor(r);
    };
    while (bytes > 0 && !ec) {
        if (batched == 0 && bytes >= kRecordBytes) {
            write(data, kRecordBytes);
            data += kRecordBytes;
            bytes -= kRecordBytes;
            continue;
        }
        const size_t n = std::min(bytes, kRecordBytes - batched);
        std::memcpy(t_batch.data() + batched, data, n);
        batched += n;
        data += n;
        bytes -= n;
        if (batched == kRecordBytes) {
            write(t_batch.data(), batched);
            batched = 0;
        }
    }
}

void LeanTlsCore::endEncrypt(error_code &ec)
{
    if (batched == 0 || ec)
        return;
    ERR_clear_error();
    const int r = SSL_write(ssl, t_batch.data(), int(batched));
    batched = 0;
    if (r <= 0)
        ec = errorFor(r);
}

size_t LeanTlsCore::decrypt(uint8_t *into, size_t bytes, error_code &ec)
{
    size_t total = 0;
    while (total < bytes) {
        ERR_clear_error();
        const int want = int(std::min<size_t>(bytes - total, size_t(std::numeric_limits<int>::max())));
        const int r = SSL_read(ssl, into + total, want);
        if (r > 0) {
            total += size_t(r);
            continue;
        }
        if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ && total == 0)
            ec = errorFor(r);
        break; // bytes already read are reported first; an error shows on the next read
    }
    return total;
}

void LeanTlsCore::receive(error_code &ec)
{
    if (eof)
        return;
    if (inTaken > 0) {
        in.erase(in.begin(), in.begin() + std::ptrdiff_t(inTaken));
        inTaken = 0;
    }
    if (!socket.non_blocking())
        socket.non_blocking(true, ec);
    if (ec)
        return;
    const size_t queued = socket.available(ec);
    if (ec)
        return;
    const size_t want = std::clamp<size_t>(queued, 2 * 1024, kWriteBatch);
    const size_t had = in.size();
    in.resize(had + want);
    const size_t n = socket.read_some(asio::buffer(in.data() + had, want), ec);
    in.resize(had + n);
    if (in.empty())
        release(in);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
        ec = {};
    } else if (ec == asio::error::eof) {
        ec = {};
        eof = true;
    }
}

int LeanTlsCore::handshakeStep(error_code &ec)
{
    ERR_clear_error();
    const int r = SSL_do_handshake(ssl);
    if (r == 1)
        return 0;
    if (SSL_get_error(ssl, r) == SSL_ERROR_WANT_READ)
        return -1;
    ec = errorFor(r);
    return 1;
}

void LeanTlsCore::startShutdown()
{
    ERR_clear_error();
    SSL_shutdown(ssl); // queues close_notify in `out`; the peer's is not awaited
    ERR_clear_error();
}

void LeanTlsCore::pump(const std::shared_ptr<LeanTlsCore> &self)
{
    LeanTlsCore &c = *self;
    if (c.flushing || c.out.empty() || c.writeError)
        return;
    c.flushing = true;
    c.sending.swap(c.out);
    c.out.clear();
    asio::async_write(c.socket, asio::buffer(c.sending), [self](error_code ec, size_t n) {
        LeanTlsCore &k = *self;
        k.flushing = false;
        k.sent += n;
        if (ec)
            k.writeError = ec;
        release(k.sending);
        k.flushed.cancel();
        pump(self);
    });
}

} // namespace detail

void LeanTlsStream::set_verify_mode(asio::ssl::verify_mode mode)
{
    SSL_set_verify(m_core->ssl, int(mode), SSL_get_verify_callback(m_core->ssl));
}

void LeanTlsStream::set_verify_callback(std::function<bool(bool, asio::ssl::verify_context &)> callback)
{
    m_core->verify = std::move(callback);
    SSL_set_verify(m_core->ssl, SSL_get_verify_mode(m_core->ssl), verifyTrampoline);
}

void LeanTlsStream::startHandshake(Core &c, asio::ssl::stream_base::handshake_type type)
{
    if (type == asio::ssl::stream_base::client)
        SSL_set_connect_state(c.ssl);
    else
        SSL_set_accept_state(c.ssl);
}

void teardown(boost::beast::role_type, LeanTlsStream &stream, error_code &ec)
{
    // Synchronous close: no close_notify (it would need the socket's executor); the TCP
    // connection ends, which the peer reads as a truncated stream.
    stream.next_layer().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
}

} // namespace rookery::net
