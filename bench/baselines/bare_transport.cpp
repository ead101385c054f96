// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/baselines/bare_transport.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include "engine/common/error.h"
#include "engine/net/tls_context.h"

namespace rookery::bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using SslSocket = asio::ssl::stream<tcp::socket>;

// A connected pair on loopback: `serve` runs with the accepted end, `dial` with the
// other, each on its own thread, like two processes.
template <class Server, class Client> void connectedPair(Server serve, Client dial)
{
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto endpoint = acceptor.local_endpoint();
    std::thread server([&] {
        tcp::socket s(ioc);
        acceptor.accept(s);
        s.set_option(tcp::no_delay(true));
        serve(std::move(s));
    });
    tcp::socket c(ioc);
    c.connect(endpoint);
    c.set_option(tcp::no_delay(true));
    dial(std::move(c));
    server.join();
}

template <class Stream> void sendAll(Stream &s, const std::vector<uint8_t> &chunk, uint64_t total)
{
    for (uint64_t sent = 0; sent < total; sent += chunk.size())
        asio::write(s, asio::buffer(chunk));
    // Wait for the receiver's acknowledgement before closing: closing with unread data
    // (TLS 1.3 session tickets) would reset the connection under the receiver.
    uint8_t ack;
    asio::read(s, asio::buffer(&ack, 1));
}

template <class Stream> double receiveAll(Stream &s, size_t chunkBytes, uint64_t total)
{
    std::vector<uint8_t> buf(chunkBytes);
    asio::read(s, asio::buffer(buf)); // the first chunk starts the clock
    const auto start = Clock::now();
    for (uint64_t got = chunkBytes; got < total; got += chunkBytes)
        asio::read(s, asio::buffer(buf));
    const double rate = double(total - chunkBytes) / std::chrono::duration<double>(Clock::now() - start).count();
    asio::write(s, asio::buffer(buf.data(), 1));
    return rate;
}

std::string cipherOf(SslSocket &s) { return net::negotiatedCipher(s.native_handle()); }

} // namespace

StreamResult bareStreamThroughput(bool tls, const net::TlsCredentials &server, const net::TlsCredentials &client,
                                  size_t chunkBytes, uint64_t totalBytes)
{
    StreamResult r;
    const std::vector<uint8_t> chunk(chunkBytes, 0x5a);
    if (!tls) {
        connectedPair([&](tcp::socket s) { r.bytesPerSecond = receiveAll(s, chunkBytes, totalBytes); },
                      [&](tcp::socket s) { sendAll(s, chunk, totalBytes); });
        r.cipher = "none";
        return r;
    }
    auto serverCtx = net::makeTlsContext(server, true), clientCtx = net::makeTlsContext(client, false);
    std::string serverCipher;
    connectedPair(
        [&](tcp::socket s) {
            SslSocket ssl(std::move(s), *serverCtx);
            ssl.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
            ssl.handshake(asio::ssl::stream_base::server);
            serverCipher = cipherOf(ssl);
            r.bytesPerSecond = receiveAll(ssl, chunkBytes, totalBytes);
        },
        [&](tcp::socket s) {
            SslSocket ssl(std::move(s), *clientCtx);
            ssl.set_verify_mode(asio::ssl::verify_peer);
            ssl.handshake(asio::ssl::stream_base::client);
            r.cipher = cipherOf(ssl);
            sendAll(ssl, chunk, totalBytes);
        });
    if (serverCipher != r.cipher)
        throw Error("bare TLS: the two ends negotiated different ciphers");
    return r;
}

StreamResult bareAsyncTlsThroughput(const net::TlsCredentials &server, const net::TlsCredentials &client,
                                    size_t chunkBytes, uint64_t totalBytes)
{
    auto serverCtx = net::makeTlsContext(server, true), clientCtx = net::makeTlsContext(client, false);
    asio::io_context serverIo(1), clientIo(1);
    tcp::acceptor acceptor(serverIo, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    SslSocket in(serverIo, *serverCtx), out(clientIo, *clientCtx);
    std::thread accepting([&] {
        acceptor.accept(in.next_layer());
        in.next_layer().set_option(tcp::no_delay(true));
        in.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
        in.handshake(asio::ssl::stream_base::server);
    });
    out.next_layer().connect(acceptor.local_endpoint());
    out.next_layer().set_option(tcp::no_delay(true));
    out.set_verify_mode(asio::ssl::verify_peer);
    out.handshake(asio::ssl::stream_base::client);
    accepting.join();

    StreamResult r;
    r.cipher = cipherOf(out);
    const std::vector<uint8_t> chunk(chunkBytes, 0x5a);
    std::vector<uint8_t> buf(chunkBytes);
    uint64_t sent = 0, got = 0;
    Clock::time_point first;
    uint8_t ack = 0;
    std::function<void()> receive = [&] {
        asio::async_read(in, asio::buffer(buf), [&](boost::system::error_code ec, size_t) {
            if (ec)
                throw Error("bare async TLS: " + ec.message());
            if ((got += chunkBytes) == chunkBytes)
                first = Clock::now();
            if (got < totalBytes)
                return receive();
            r.bytesPerSecond = double(got - chunkBytes) / std::chrono::duration<double>(Clock::now() - first).count();
            asio::async_write(in, asio::buffer(&ack, 1), [](boost::system::error_code, size_t) {});
        });
    };
    std::function<void()> transmit = [&] {
        asio::async_write(out, asio::buffer(chunk), [&](boost::system::error_code ec, size_t) {
            if (ec)
                throw Error("bare async TLS: " + ec.message());
            if ((sent += chunkBytes) < totalBytes)
                return transmit();
            asio::async_read(out, asio::buffer(&ack, 1), [](boost::system::error_code, size_t) {}); // see sendAll()
        });
    };
    receive();
    transmit();
    std::thread serverThread([&] { serverIo.run(); });
    clientIo.run();
    serverThread.join();
    return r;
}

std::vector<double> bareTlsRoundTrips(const net::TlsCredentials &server, const net::TlsCredentials &client,
                                      size_t bytes, int count)
{
    auto serverCtx = net::makeTlsContext(server, true), clientCtx = net::makeTlsContext(client, false);
    std::vector<double> rtts;
    connectedPair(
        [&](tcp::socket s) {
            SslSocket ssl(std::move(s), *serverCtx);
            ssl.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
            ssl.handshake(asio::ssl::stream_base::server);
            std::vector<uint8_t> buf(bytes);
            for (int i = 0; i < count; ++i) {
                asio::read(ssl, asio::buffer(buf));
                asio::write(ssl, asio::buffer(buf));
            }
            asio::read(ssl, asio::buffer(buf.data(), 1)); // see sendAll()
        },
        [&](tcp::socket s) {
            SslSocket ssl(std::move(s), *clientCtx);
            ssl.set_verify_mode(asio::ssl::verify_peer);
            ssl.handshake(asio::ssl::stream_base::client);
            std::vector<uint8_t> buf(bytes, 1);
            for (int i = 0; i < count; ++i) {
                const auto start = Clock::now();
                asio::write(ssl, asio::buffer(buf));
                asio::read(ssl, asio::buffer(buf));
                rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
            }
            asio::write(ssl, asio::buffer(buf.data(), 1));
        });
    std::sort(rtts.begin(), rtts.end());
    return rtts;
}

} // namespace rookery::bench
