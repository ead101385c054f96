// SPDX-License-Identifier: GPL-3.0-or-later
// LeanTlsStream on 127.0.0.1: it speaks TLS with Asio's own ssl::stream both ways,
// carries bulk data in both directions at once, reports refusals, truncation and
// close_notify with Asio's error codes, and holds no buffer while a link is idle.
#include <QtTest>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include "engine/net/certificate_authority.h"
#include "engine/net/identity.h"
#include "engine/net/lean_tls_stream.h"
#include "engine/net/tls_context.h"

using namespace rookery;
using namespace rookery::net;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using boost::system::error_code;
using Bytes = std::vector<uint8_t>;

namespace {

TlsCredentials credentialsFrom(const CertificateAuthority &ca)
{
    const Identity id = Identity::generate();
    return {ca.issue(id.publicKeyPem()), id.privateKeyPem(), ca.certificatePem()};
}

Bytes pattern(size_t n, uint8_t seed)
{
    Bytes b(n);
    for (size_t i = 0; i < n; ++i)
        b[i] = uint8_t(i * 131 + seed + (i >> 12));
    return b;
}

// A connected pair of TCP sockets on 127.0.0.1.
std::pair<asio::ip::tcp::socket, asio::ip::tcp::socket> socketPair(asio::io_context &ioc)
{
    asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket client(ioc);
    client.connect(acceptor.local_endpoint());
    asio::ip::tcp::socket server = acceptor.accept();
    return {std::move(client), std::move(server)};
}

// Runs the context until `done` or 10 s; true when done.
bool runUntil(asio::io_context &ioc, const std::function<bool()> &done)
{
    const auto until = std::chrono::steady_clock::now() + 10s;
    ioc.restart();
    while (!done() && std::chrono::steady_clock::now() < until) {
        ioc.run_for(5ms);
        ioc.restart();
    }
    return done();
}

template <class Stream> void requirePeer(Stream &s, bool server)
{
    s.set_verify_mode(asio::ssl::verify_peer | (server ? asio::ssl::verify_fail_if_no_peer_cert : 0));
}

} // namespace

class TestLeanTlsStream : public QObject
{
    Q_OBJECT

    CertificateAuthority m_ca = CertificateAuthority::create("lean-test");
    std::shared_ptr<asio::ssl::context> m_serverTls = makeTlsContext(credentialsFrom(m_ca), true);
    std::shared_ptr<asio::ssl::context> m_clientTls = makeTlsContext(credentialsFrom(m_ca), false);

    // Handshakes both ends; returns their errors.
    template <class A, class B> std::pair<error_code, error_code> handshake(asio::io_context &ioc, A &client, B &server)
    {
        std::optional<error_code> c, s;
        client.async_handshake(asio::ssl::stream_base::client, [&](error_code e) { c = e; });
        server.async_handshake(asio::ssl::stream_base::server, [&](error_code e) { s = e; });
        if (!runUntil(ioc, [&] { return c && s; }))
            return {asio::error::timed_out, asio::error::timed_out};
        return {*c, *s};
    }

    // Sends `a` from x to y and `b` from y to x at the same time; checks both arrive whole.
    template <class X, class Y> void exchange(asio::io_context &ioc, X &x, Y &y, const Bytes &a, const Bytes &b)
    {
        Bytes gotA(a.size()), gotB(b.size());
        int done = 0;
        error_code firstError;
        auto count = [&](error_code e, size_t) {
            if (e && !firstError)
                firstError = e;
            ++done;
        };
        asio::async_write(x, asio::buffer(a), count);
        asio::async_write(y, asio::buffer(b), count);
        asio::async_read(y, asio::buffer(gotA), count);
        asio::async_read(x, asio::buffer(gotB), count);
        QVERIFY(runUntil(ioc, [&] { return done == 4; }));
        QVERIFY2(!firstError, firstError.message().c_str());
        QVERIFY(gotA == a);
        QVERIFY(gotB == b);
    }

private Q_SLOTS:
    void bulkBothWaysAtOnceThenIdleHoldsNoBuffer()
    {
        asio::io_context ioc;
        auto [c, s] = socketPair(ioc);
        LeanTlsStream client(std::move(c), *m_clientTls), server(std::move(s), *m_serverTls);
        requirePeer(client, false);
        requirePeer(server, true);
        int verifyCalls = 0;
        server.set_verify_callback([&](bool preverified, asio::ssl::verify_context &) {
            ++verifyCalls;
            return preverified;
        });
        const auto [ce, se] = handshake(ioc, client, server);
        QVERIFY2(!ce && !se, (ce.message() + " / " + se.message()).c_str());
        QVERIFY(verifyCalls >= 1); // the callback judged the client's chain
        QCOMPARE(negotiatedCipher(client.native_handle()), negotiatedCipher(server.native_handle()));
        QVERIFY(!peerNodeId(server.native_handle()).empty());

        exchange(ioc, client, server, pattern(3 << 20, 1), pattern((1 << 20) + 777, 2));
        if (QTest::currentTestFailed())
            return;
        exchange(ioc, client, server, pattern(5, 3), pattern(1, 4)); // small messages after large
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(client.bufferedCapacity(), size_t(0));
        QCOMPARE(server.bufferedCapacity(), size_t(0));

        // A read waiting on an idle link holds nothing until bytes come.
        std::array<uint8_t, 64> into{};
        std::optional<std::pair<error_code, size_t>> read;
        server.async_read_some(asio::buffer(into), [&](error_code e, size_t n) { read.emplace(e, n); });
        ioc.restart();
        ioc.run_for(50ms);
        QVERIFY(!read);
        QCOMPARE(server.bufferedCapacity(), size_t(0));
        const Bytes hello = {'h', 'i', '!'};
        asio::async_write(client, asio::buffer(hello), [](error_code, size_t) {});
        QVERIFY(runUntil(ioc, [&] { return read.has_value(); }));
        QVERIFY(!read->first);
        QCOMPARE(read->second, size_t(3));
        QVERIFY(std::equal(hello.begin(), hello.end(), into.begin()));
        QCOMPARE(server.bufferedCapacity(), size_t(0));
    }

    void speaksWithAsiosSslStreamBothWays()
    {
        {
            asio::io_context ioc;
            auto [c, s] = socketPair(ioc);
            LeanTlsStream client(std::move(c), *m_clientTls);
            asio::ssl::stream<asio::ip::tcp::socket> server(std::move(s), *m_serverTls);
            requirePeer(client, false);
            requirePeer(server, true);
            const auto [ce, se] = handshake(ioc, client, server);
            QVERIFY2(!ce && !se, (ce.message() + " / " + se.message()).c_str());
            exchange(ioc, client, server, pattern(700'000, 5), pattern(90'001, 6));
        }
        {
            asio::io_context ioc;
            auto [c, s] = socketPair(ioc);
            asio::ssl::stream<asio::ip::tcp::socket> client(std::move(c), *m_clientTls);
            LeanTlsStream server(std::move(s), *m_serverTls);
            requirePeer(client, false);
            requirePeer(server, true);
            const auto [ce, se] = handshake(ioc, client, server);
            QVERIFY2(!ce && !se, (ce.message() + " / " + se.message()).c_str());
            exchange(ioc, client, server, pattern(123'457, 7), pattern(2 << 20, 8));
        }
    }

    void aRefusedCertificateReachesThePeerAsAnAlert()
    {
        // The client's certificate is from another CA: the server refuses it, and the
        // client learns why from the alert (which must be flushed before the failure).
        const CertificateAuthority other = CertificateAuthority::create("someone-else");
        auto strangerTls = makeTlsContext(credentialsFrom(other), false);
        asio::io_context ioc;
        auto [c, s] = socketPair(ioc);
        asio::ssl::stream<asio::ip::tcp::socket> client(std::move(c), *strangerTls);
        LeanTlsStream server(std::move(s), *m_serverTls);
        client.set_verify_mode(asio::ssl::verify_none);
        requirePeer(server, true);
        const auto [ce, se] = handshake(ioc, client, server);
        QVERIFY(se);
        QCOMPARE(se.category(), asio::error::get_ssl_category());
        QVERIFY2(isCertificateRefusal(se), describeTlsError(se).c_str());
        // TLS 1.3: the client finishes its side first and reads the alert on its first read.
        std::array<uint8_t, 16> into{};
        std::optional<error_code> readError;
        if (!ce)
            client.async_read_some(asio::buffer(into), [&](error_code e, size_t) { readError = e; });
        else
            readError = ce;
        QVERIFY(runUntil(ioc, [&] { return readError.has_value(); }));
        QVERIFY2(isCertificateRefusal(*readError), describeTlsError(*readError).c_str());
    }

    void closeNotifyReadsAsEofAndACutAsTruncation()
    {
        for (const bool clean : {true, false}) {
            asio::io_context ioc;
            auto [c, s] = socketPair(ioc);
            LeanTlsStream client(std::move(c), *m_clientTls), server(std::move(s), *m_serverTls);
            requirePeer(client, false);
            requirePeer(server, true);
            const auto [ce, se] = handshake(ioc, client, server);
            QVERIFY(!ce && !se);
            std::optional<error_code> shut, readError;
            std::array<uint8_t, 16> into{};
            server.async_read_some(asio::buffer(into), [&](error_code e, size_t) { readError = e; });
            if (clean) {
                client.async_shutdown([&](error_code e) { shut = e; });
            } else {
                // A FIN with no close_notify. (A close() here would reset the connection:
                // the server's session tickets sit unread in the client's socket.)
                client.next_layer().shutdown(asio::ip::tcp::socket::shutdown_send);
            }
            QVERIFY(runUntil(ioc, [&] { return readError.has_value() && (!clean || shut.has_value()); }));
            if (clean) {
                QVERIFY(!*shut);
                QVERIFY2(*readError == error_code(asio::error::eof), readError->message().c_str());
            } else {
                QVERIFY2(*readError == error_code(asio::ssl::error::stream_truncated), readError->message().c_str());
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestLeanTlsStream)
#include "tst_lean_tls_stream.moc"
