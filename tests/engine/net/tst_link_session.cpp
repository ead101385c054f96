// SPDX-License-Identifier: GPL-3.0-or-later
// Links over boost::beast::test::stream: the whole protocol without sockets or TLS.
// A "raw" peer (a bare WebSocket stream driven synchronously from the test thread)
// plays the hostile side.
#include <QtTest>

#include <boost/beast/_experimental/test/stream.hpp>

#include "engine/net/link_session_impl.h"
#include "engine/net/net_context.h"
#include "engine/net/net_context_impl.h"
#include "engine/net/wire.pb.h"
#include "tests/engine/net/allocation_probe.h"
#include "tests/engine/net/link_test_support.h"
#include "tests/engine/net/wire_samples.h"

using namespace rookery;
using namespace rookery::net;
using namespace std::chrono_literals;
namespace btest = boost::beast::test;
using StreamLinkSession = LinkSession<btest::stream>;
using RawStream = websocket::stream<btest::stream>;
using Bytes = std::vector<uint8_t>;

// The test::stream instantiation of the session lives here, not in the library.
template class rookery::net::LinkSession<btest::stream>;

namespace {

LinkConfig config(const std::string &id)
{
    LinkConfig c;
    c.nodeId = id;
    c.handshakeTimeout = 5s;
    return c;
}

std::shared_ptr<StreamLinkSession> makeLinkSession(Side side, LinkConfig c, test::EventLog &log, btest::stream stream)
{
    LinkSessionSetup s;
    s.side = side;
    s.config = std::move(c);
    s.events = log.events();
    s.remote = side == Side::Client ? "server" : "client";
    auto session = std::make_shared<StreamLinkSession>(std::move(s), std::move(stream));
    session->start();
    return session;
}

Bytes bytesOf(const Message &m) { return encodeFrame(m).flatten(); }

} // namespace

class TestLinkSession : public QObject
{
    Q_OBJECT

    std::unique_ptr<NetContext> m_net;
    asio::io_context &ioc() { return m_net->impl().ioc; }

    struct Pair
    {
        std::shared_ptr<test::EventLog> clientLogPtr = std::make_shared<test::EventLog>();
        std::shared_ptr<test::EventLog> serverLogPtr = std::make_shared<test::EventLog>();
        test::EventLog &clientLog = *clientLogPtr, &serverLog = *serverLogPtr;
        std::shared_ptr<StreamLinkSession> client, server;
    };

    std::unique_ptr<Pair> openPair(LinkConfig clientConfig = config("client"),
                                   LinkConfig serverConfig = config("server"))
    {
        auto p = std::make_unique<Pair>();
        btest::stream a(ioc()), b(ioc());
        a.connect(b);
        p->server = makeLinkSession(Side::Server, std::move(serverConfig), p->serverLog, std::move(b));
        p->client = makeLinkSession(Side::Client, std::move(clientConfig), p->clientLog, std::move(a));
        return p;
    }

    // A raw peer that completes the WebSocket and Hello handshakes with a session, then
    // lets the test write whatever it likes.
    struct RawPeer
    {
        std::shared_ptr<test::EventLog> logPtr = std::make_shared<test::EventLog>();
        test::EventLog &log = *logPtr;
        std::shared_ptr<StreamLinkSession> server;
        std::unique_ptr<RawStream> ws;
    };

    std::unique_ptr<RawPeer> rawPeer(LinkConfig serverConfig = config("server"), bool hello = true)
    {
        auto r = std::make_unique<RawPeer>();
        btest::stream a(ioc()), b(ioc());
        a.connect(b);
        r->server = makeLinkSession(Side::Server, std::move(serverConfig), r->log, std::move(b));
        r->ws = std::make_unique<RawStream>(std::move(a));
        r->ws->handshake("peer", "/rookery");
        r->ws->binary(true);
        if (hello) {
            r->ws->write(asio::buffer(bytesOf(
                Hello{kOldestProtocolVersion, kProtocolVersion, "raw", NodeRole::Node, {}, Compression::None, "raw"})));
            beast::flat_buffer ack;
            r->ws->read(ack);
            const auto owner = std::make_shared<Bytes>(static_cast<const uint8_t *>(ack.data().data()),
                                                       static_cast<const uint8_t *>(ack.data().data()) + ack.size());
            const auto decoded = decodeFrame(owner, *owner);
            if (!decoded.ok() || !std::holds_alternative<HelloAck>(*decoded.message))
                qFatal("raw peer: no HelloAck");
        }
        return r;
    }

    // Reads until the session closes the WebSocket; returns the close reason it sent.
    static std::string readUntilClosed(RawStream &ws)
    {
        beast::flat_buffer b;
        beast::error_code ec;
        while (!ec) {
            b.clear();
            ws.read(b, ec);
        }
        return std::string(ws.reason().reason.c_str());
    }

private Q_SLOTS:
    void init() { m_net = std::make_unique<NetContext>(1); }
    void cleanup()
    {
        m_net->stop();
        m_net.reset();
    }

    void handshakeAgreesOnVersionAndCompression()
    {
        auto clientConfig = config("client");
        clientConfig.compression = Compression::Fp16;
        auto p = openPair(clientConfig);
        QVERIFY(test::waitUntil([&] { return p->clientLog.openedCount() == 1 && p->serverLog.openedCount() == 1; }));
        QCOMPARE(p->client->peer().nodeId, std::string("server"));
        QCOMPARE(p->server->peer().nodeId, std::string("client"));
        QCOMPARE(p->client->peer().version, kProtocolVersion);
        QVERIFY(p->client->peer().compression == Compression::Fp16);
        QVERIFY(p->server->peer().compression == Compression::Fp16);
        p->client->close("done");
        QVERIFY(test::waitUntil([&] { return p->clientLog.closedCount() == 1 && p->serverLog.closedCount() == 1; }));
    }

    void everyMessageTypeRoundTripsBothWays()
    {
        auto p = openPair();
        QVERIFY(test::waitUntil([&] { return p->clientLog.openedCount() == 1 && p->serverLog.openedCount() == 1; }));
        std::vector<Message> samples;
        for (auto &m : test::sampleMessages())
            if (!std::holds_alternative<Hello>(m) && !std::holds_alternative<HelloAck>(m) &&
                !std::holds_alternative<Goodbye>(m) && !std::holds_alternative<Ping>(m))
                samples.push_back(m);
        for (auto [from, to] : {std::pair{p->client.get(), &p->serverLog}, std::pair{p->server.get(), &p->clientLog}}) {
            for (const auto &m : samples)
                QCOMPARE(from->send(m), SendResult::Queued);
            QVERIFY(test::waitUntil([&] { return to->messageCount() == samples.size(); }));
            const auto got = to->takeMessages();
            for (size_t i = 0; i < samples.size(); ++i)
                QVERIFY2(test::sameMessage(samples[i], got[i]), messageName(samples[i]).data());
        }
        // Ping is answered by the link itself; the Pong comes back to the sender.
        QCOMPARE(p->client->send(Ping{77, {}}), SendResult::Queued);
        QVERIFY(test::waitUntil([&] { return p->clientLog.messageCount() == 1; }));
        QCOMPARE(std::get<Pong>(p->clientLog.takeMessages()[0]).nonce, uint64_t(77));
        // Goodbye carries the reason of a graceful close.
        p->server->close("stage reassigned");
        QVERIFY(test::waitUntil([&] { return p->clientLog.closedCount() == 1; }));
        QVERIFY2(p->clientLog.lastClose().reason.find("stage reassigned") != std::string::npos,
                 p->clientLog.lastClose().reason.c_str());
        QVERIFY(p->clientLog.lastClose().clean);
        QCOMPARE(p->client->send(Ping{1, {}}), SendResult::NotOpen);
    }

    void receivedTensorsPointIntoTheFrame()
    {
        auto p = openPair();
        QVERIFY(test::waitUntil([&] { return p->serverLog.openedCount() == 1; }));
        QCOMPARE(p->client->send(Gradients{1, 1, test::floatTensor({256, 3}, 1)}), SendResult::Queued);
        QVERIFY(test::waitUntil([&] { return p->serverLog.messageCount() == 1; }));
        const auto g = std::get<Gradients>(p->serverLog.takeMessages()[0]);
        QCOMPARE(reinterpret_cast<uintptr_t>(g.gradients.data) % 64, uintptr_t(0));
        QVERIFY(g.gradients.owner != nullptr);
    }

    void wrongProtocolVersionIsRefused()
    {
        test::LogCapture logs;
        auto clientConfig = config("client");
        clientConfig.minVersion = net::kProtocolVersion + 1;
        clientConfig.maxVersion = net::kProtocolVersion + 2;
        auto p = openPair(clientConfig);
        QVERIFY(test::waitUntil([&] { return p->clientLog.closedCount() == 1 && p->serverLog.closedCount() == 1; }));
        QCOMPARE(p->clientLog.openedCount(), 0);
        const auto c = p->clientLog.lastClose();
        QVERIFY2(c.reason.find("no common protocol version") != std::string::npos, c.reason.c_str());
        QVERIFY(c.fatal);
        const std::string v = std::to_string(net::kProtocolVersion);
        const std::string expected = "no common protocol version: this node speaks " + v + ".." + v + ", the peer " +
                                     std::to_string(net::kProtocolVersion + 1) + ".." +
                                     std::to_string(net::kProtocolVersion + 2);
        QVERIFY2(logs.contains(expected), logs.all().c_str());
    }

    void hostileFramesAreClosedWithAReason_data()
    {
        QTest::addColumn<QByteArray>("frame");
        QTest::addColumn<QString>("reason");
        auto row = [](const char *name, const Bytes &f, const char *reason) {
            QTest::newRow(name) << QByteArray(reinterpret_cast<const char *>(f.data()), qsizetype(f.size()))
                                << QString(reason);
        };
        Bytes unknown = {3, 0, 0, 0, 0x9a, 0x06, 0x00}; // Envelope field 99, empty
        row("unknown message type", unknown, "unknown message type (Envelope field 99)");
        Bytes full = bytesOf(test::sampleMessages()[5]);
        row("truncated frame", Bytes(full.begin(), full.end() - 10), "truncated frame");
        row("truncated prefix", Bytes{1, 0}, "truncated frame");
        row("oversized header length", Bytes{0xff, 0xff, 0xff, 0x7f, 1}, "header too large");
        Bytes bad = full;
        bad[bad.size() - 3] ^= 0x40;
        row("bad checksum", bad, "bad checksum");
        Bytes longer = full;
        longer.push_back(0);
        row("trailing bytes", longer, "trailing bytes");
        row("Hello on an open link", bytesOf(Hello{}), "Hello on an open link");
    }

    void hostileFramesAreClosedWithAReason()
    {
        QFETCH(QByteArray, frame);
        QFETCH(QString, reason);
        test::LogCapture logs;
        auto r = rawPeer();
        QVERIFY(test::waitUntil([&] { return r->log.openedCount() == 1; }));
        test::resetLargestAllocation();
        r->ws->write(asio::buffer(frame.data(), size_t(frame.size())));
        const std::string sent = readUntilClosed(*r->ws);
        QVERIFY2(QString::fromStdString(sent).contains(reason), sent.c_str());
        QVERIFY(test::waitUntil([&] { return r->log.closedCount() == 1; }));
        QVERIFY2(QString::fromStdString(r->log.lastClose().reason).contains(reason), r->log.lastClose().reason.c_str());
        QVERIFY2(logs.contains(reason.toStdString()), logs.all().c_str());
        QVERIFY2(test::largestAllocation() < (4u << 20), std::to_string(test::largestAllocation()).c_str());
    }

    void oversizedLengthFieldAllocatesNothing()
    {
        // A tensor that claims 2^40 floats: refused from the header, before any buffer.
        wire::Envelope env;
        auto *t = env.mutable_gradients()->mutable_gradients();
        t->set_dtype(wire::FLOAT32);
        t->add_shape(1ll << 40);
        t->set_byte_length(4ull << 40);
        const std::string header = env.SerializeAsString();
        Bytes frame(4 + header.size());
        const uint32_t n = uint32_t(header.size());
        std::memcpy(frame.data(), &n, 4);
        std::memcpy(frame.data() + 4, header.data(), header.size());
        auto r = rawPeer();
        QVERIFY(test::waitUntil([&] { return r->log.openedCount() == 1; }));
        test::resetLargestAllocation();
        r->ws->write(asio::buffer(frame));
        QVERIFY(readUntilClosed(*r->ws).find("limit exceeded") != std::string::npos);
        QVERIFY2(test::largestAllocation() < (1u << 20), std::to_string(test::largestAllocation()).c_str());
    }

    void messageOverTheLimitIsRefusedByTheWebSocket()
    {
        auto serverConfig = config("server");
        serverConfig.limits.maxMessageBytes = 1 << 20;
        auto r = rawPeer(serverConfig);
        r->ws->auto_fragment(false); // one frame whose header declares 4 MiB
        Bytes big(4 << 20, 0);
        big[0] = 16; // a plausible header length: the WebSocket limit must refuse it first
        r->ws->write(asio::buffer(big));
        QVERIFY(test::waitUntil([&] { return r->log.closedCount() == 1; }));
        QVERIFY2(r->log.lastClose().reason.find("over the limit") != std::string::npos,
                 r->log.lastClose().reason.c_str());
        // (Allocations are not checked here: test::stream itself buffers the 4 MiB.)
    }

    void messageBeforeHelloIsRefused()
    {
        auto r = rawPeer(config("server"), false);
        r->ws->write(asio::buffer(bytesOf(Ping{1, {}})));
        QVERIFY(readUntilClosed(*r->ws).find("Ping before the Hello exchange") != std::string::npos);
    }

    void textMessageIsRefused()
    {
        auto r = rawPeer();
        r->ws->text(true);
        r->ws->write(asio::buffer(std::string("hello")));
        QVERIFY(readUntilClosed(*r->ws).find("text message") != std::string::npos);
    }

    void silentPeerTimesOutTheHandshake()
    {
        auto c = config("client");
        c.handshakeTimeout = 300ms;
        auto logPtr = std::make_shared<test::EventLog>();
        auto &log = *logPtr;
        btest::stream a(ioc()), b(ioc());
        a.connect(b);
        auto client = makeLinkSession(Side::Client, c, log, std::move(a));
        QVERIFY(test::waitUntil([&] { return log.closedCount() == 1; }, 5s));
        QVERIFY2(log.lastClose().reason.find("did not finish within 300 ms") != std::string::npos,
                 log.lastClose().reason.c_str());
    }

    void idlePeerTimesOut()
    {
        auto c = config("server");
        c.idleTimeout = 400ms;
        auto r = rawPeer(c); // then the raw peer reads nothing and answers no pings
        QVERIFY(test::waitUntil([&] { return r->log.closedCount() == 1; }, 5s));
        QVERIFY2(r->log.lastClose().reason.find("timed out") != std::string::npos, r->log.lastClose().reason.c_str());
    }

    void fullQueueRefusesThenReportsWritable()
    {
        auto c = config("client");
        c.maxQueuedBytes = 1 << 20;
        c.upload = std::make_shared<TokenBucket>(4 << 20, 64 << 10); // 4 MiB/s: the queue fills
        auto p = openPair(c);
        QVERIFY(test::waitUntil([&] { return p->clientLog.openedCount() == 1; }));
        const auto tensor = test::floatTensor({64, 1024}, 1); // 256 KiB
        int queued = 0;
        SendResult r = SendResult::Queued;
        for (int i = 0; i < 100 && r == SendResult::Queued; ++i)
            if ((r = p->client->send(Gradients{uint64_t(i), 0, tensor})) == SendResult::Queued)
                ++queued;
        QCOMPARE(r, SendResult::QueueFull);
        QVERIFY(queued >= 3 && queued <= 5);
        QVERIFY(p->client->stats().queuedBytes <= (1u << 20));
        QVERIFY(test::waitUntil([&] { return p->clientLog.writableCount() >= 1; }));
        QCOMPARE(p->client->send(Gradients{1000, 0, tensor}), SendResult::Queued);
        QVERIFY(test::waitUntil([&] { return p->serverLog.messageCount() == size_t(queued + 1); }));
    }

    void pingFloodStaysBounded()
    {
        auto c = config("server");
        c.maxQueuedMessages = 16;
        c.upload = std::make_shared<TokenBucket>(64 << 10, 1024); // slow answers
        auto r = rawPeer(c);
        QVERIFY(test::waitUntil([&] { return r->log.openedCount() == 1; }));
        const Bytes ping = bytesOf(Ping{5, {}});
        size_t maxQueued = 0;
        for (int i = 0; i < 5000; ++i) {
            r->ws->write(asio::buffer(ping));
            maxQueued = std::max(maxQueued, r->server->stats().queuedMessages);
        }
        QVERIFY(test::waitUntil([&] { return r->server->stats().messagesReceived >= 5000; }));
        QVERIFY2(maxQueued <= 16, std::to_string(maxQueued).c_str());
        QVERIFY(r->server->isOpen());
    }

    void uploadCapIsApplied()
    {
        auto c = config("client");
        c.upload = std::make_shared<TokenBucket>(2 << 20, 64 << 10); // 2 MiB/s
        auto p = openPair(c);
        QVERIFY(test::waitUntil([&] { return p->serverLog.openedCount() == 1; }));
        const auto tensor = test::floatTensor({256, 256}, 1); // 256 KiB
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < 8; ++i)
            QCOMPARE(p->client->send(Gradients{uint64_t(i), 0, tensor}), SendResult::Queued);
        QVERIFY(test::waitUntil([&] { return p->serverLog.messageCount() == 8; }));
        // 2 MiB at 2 MiB/s with a 64 KiB burst: close to a second, never much less.
        QVERIFY(std::chrono::steady_clock::now() - start > 800ms);
    }

    void failingStreamClosesCleanlyAtEveryStep()
    {
        for (int n = 1; n <= 12; ++n) {
            btest::fail_count fc{size_t(n)};
            btest::stream a(ioc(), fc), b(ioc());
            a.connect(b);
            auto clientLogPtr = std::make_shared<test::EventLog>(), serverLogPtr = std::make_shared<test::EventLog>();
            auto &clientLog = *clientLogPtr, &serverLog = *serverLogPtr;
            auto server = makeLinkSession(Side::Server, config("server"), serverLog, std::move(b));
            auto client = makeLinkSession(Side::Client, config("client"), clientLog, std::move(a));
            QVERIFY(test::waitUntil([&] { return clientLog.openedCount() == 1 || clientLog.closedCount() == 1; }));
            if (clientLog.openedCount() == 1) // still alive: a send makes the Nth operation fail
                for (int i = 0; i < 5 && clientLog.closedCount() == 0; ++i)
                    (void)client->send(Ping{uint64_t(i), {}});
            QVERIFY2(test::waitUntil([&] { return clientLog.closedCount() == 1; }), std::to_string(n).c_str());
            server->close("done");
            QVERIFY(test::waitUntil([&] { return serverLog.closedCount() == 1; }));
            QCOMPARE(clientLog.closedCount(), size_t(1));
        }
    }
};

QTEST_APPLESS_MAIN(TestLinkSession)
#include "tst_link_session.moc"
