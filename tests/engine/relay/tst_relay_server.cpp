// SPDX-License-Identifier: GPL-3.0-or-later
// The relay on loopback, driven by plain Asio sockets as the nodes: pairing, bytes both
// ways, every refusal, the caps, the rate cap, closing, idling, the tap. Every wait is
// bounded (kWait unless shorter).
#include <QtTest>

#include <mutex>
#include <optional>
#include <random>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/relay/relay_server.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace rookery::relay;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

namespace {

constexpr std::chrono::milliseconds kWait = 20s;
constexpr int kTimedOut = -2, kClosed = -1;

RelaySettings loopback()
{
    RelaySettings s;
    s.bindAddress = "127.0.0.1";
    return s;
}

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Bytes randomBytes(size_t n, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    Bytes b(n);
    for (auto &x : b)
        x = uint8_t(rng());
    return b;
}

uint64_t fnv1a(const Bytes &b)
{
    uint64_t h = 1469598103934665603ull;
    for (uint8_t x : b)
        h = (h ^ x) * 1099511628211ull;
    return h;
}

// Runs `ioc` until `done` holds or `timeout` passes.
bool runUntil(asio::io_context &ioc, const std::function<bool()> &done, std::chrono::milliseconds timeout = kWait)
{
    const auto deadline = Clock::now() + timeout;
    ioc.restart();
    while (!done()) {
        const auto left = deadline - Clock::now();
        if (left <= 0s)
            return false;
        if (ioc.run_one_for(left) == 0 && ioc.stopped())
            return done(); // nothing left to run: nothing will change
    }
    return true;
}

tcp::socket connectTo(asio::io_context &ioc, uint16_t port, const char *from = nullptr)
{
    tcp::socket s(ioc);
    if (from) {
        s.open(tcp::v4());
        s.bind({asio::ip::make_address(from), 0});
    }
    s.connect({asio::ip::make_address("127.0.0.1"), port});
    s.set_option(tcp::no_delay(true));
    return s;
}

tcp::socket greet(asio::io_context &ioc, uint16_t port, const std::string &greeting)
{
    auto s = connectTo(ioc, port);
    asio::write(s, asio::buffer(greeting)); // 24 bytes into an empty send buffer: never blocks
    return s;
}

// The relay's reply byte; kClosed when it closed without one, kTimedOut when nothing came.
int readReply(asio::io_context &ioc, tcp::socket &s, std::chrono::milliseconds timeout = kWait)
{
    uint8_t byte = 0;
    std::optional<boost::system::error_code> result;
    asio::async_read(s, asio::buffer(&byte, 1), [&](const boost::system::error_code &ec, size_t) { result = ec; });
    if (!runUntil(
            ioc, [&] { return result.has_value(); }, timeout)) {
        s.cancel();
        runUntil(ioc, [&] { return result.has_value(); });
        return kTimedOut;
    }
    return *result ? kClosed : byte;
}

// Reads until the relay closes `s`; false if it is still open after `timeout`.
bool closedWithin(asio::io_context &ioc, tcp::socket &s, std::chrono::milliseconds timeout = kWait)
{
    std::array<uint8_t, 4096> sink{};
    bool closed = false;
    std::function<void()> readMore = [&] {
        s.async_read_some(asio::buffer(sink), [&](const boost::system::error_code &ec, size_t) {
            if (ec)
                closed = true;
            else
                readMore();
        });
    };
    readMore();
    if (runUntil(
            ioc, [&] { return closed; }, timeout))
        return true;
    s.cancel();
    runUntil(ioc, [&] { return closed; });
    return false;
}

struct Linked
{
    tcp::socket a, b;
};

// Registers a pair, connects both ends and checks that both are told Paired.
Linked link(RelayServer &relay, asio::io_context &ioc, const std::string &aNode = "node-a",
            const std::string &bNode = "node-b")
{
    const auto [ta, tb] = relay.expectPair(aNode, bNode);
    Linked l{greet(ioc, relay.port(), relayPreamble(ta)), greet(ioc, relay.port(), relayPreamble(tb))};
    if (readReply(ioc, l.a) != 0 || readReply(ioc, l.b) != 0)
        throw Error("the relay did not pair " + aNode + " and " + bNode);
    return l;
}

// Sends `ab` from a to b and `ba` from b to a at the same time; returns what arrived.
std::pair<Bytes, Bytes> exchange(asio::io_context &ioc, Linked &l, const Bytes &ab, const Bytes &ba)
{
    Bytes atB(ab.size()), atA(ba.size());
    int done = 0;
    auto count = [&](const boost::system::error_code &ec, size_t) { done += ec ? 100 : 1; };
    asio::async_write(l.a, asio::buffer(ab), count);
    asio::async_write(l.b, asio::buffer(ba), count);
    asio::async_read(l.b, asio::buffer(atB), count);
    asio::async_read(l.a, asio::buffer(atA), count);
    if (!runUntil(ioc, [&] { return done >= 4; }) || done != 4)
        throw Error("the exchange through the relay did not complete");
    return {atB, atA};
}

} // namespace

class TestRelayServer : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void pairsAndCarriesBytesBothWays()
    {
        RelaySettings s; // every interface, reached through 127.0.0.1
        s.threads = 2;
        RelayServer relay(s);
        asio::io_context ioc;
        auto l = link(relay, ioc);
        const Bytes ab = randomBytes(8 << 20, 1), ba = randomBytes(8 << 20, 2);
        const auto [atB, atA] = exchange(ioc, l, ab, ba);
        QCOMPARE(fnv1a(atB), fnv1a(ab));
        QCOMPARE(fnv1a(atA), fnv1a(ba));
        auto c = relay.counters();
        QCOMPARE(c.bytesRelayed, uint64_t(16 << 20));
        QCOMPARE(c.pairsOpened, uint64_t(1));
        QCOMPARE(c.pairsActive, uint64_t(1));
        QCOMPARE(c.refused, uint64_t(0));
        l.a.close();
        QVERIFY(closedWithin(ioc, l.b));
        QVERIFY(test::waitFor([&] { return relay.counters().pairsActive == 0; }, kWait));
    }

    void tokenIsSingleUse()
    {
        RelayServer relay(loopback());
        asio::io_context ioc;
        const auto [ta, tb] = relay.expectPair("node-a", "node-b");
        auto a = greet(ioc, relay.port(), relayPreamble(ta));
        auto again = greet(ioc, relay.port(), relayPreamble(ta));
        QCOMPARE(readReply(ioc, again), int(RelayReply::UnknownToken));
        QVERIFY(closedWithin(ioc, again));
        auto b = greet(ioc, relay.port(), relayPreamble(tb));
        QCOMPARE(readReply(ioc, a), int(RelayReply::Paired));
        QCOMPARE(readReply(ioc, b), int(RelayReply::Paired));
        auto late = greet(ioc, relay.port(), relayPreamble(tb));
        QCOMPARE(readReply(ioc, late), int(RelayReply::UnknownToken));
        QCOMPARE(relay.counters().refused, uint64_t(2));
    }

    // A volunteer's relay: the coordinator deals the tokens (RelayExpect).
    void takesTokensDealtElsewhere()
    {
        RelayServer relay(loopback());
        asio::io_context ioc;
        const Token ta = randomToken(), tb = randomToken();
        relay.expectPair("node-a", "node-b", ta, tb);
        QVERIFY_THROWS_EXCEPTION(Error, relay.expectPair("node-c", "node-d", ta, randomToken())); // in use
        const Token same = randomToken();
        QVERIFY_THROWS_EXCEPTION(Error, relay.expectPair("node-c", "node-d", same, same));
        auto a = greet(ioc, relay.port(), relayPreamble(ta));
        auto b = greet(ioc, relay.port(), relayPreamble(tb));
        QCOMPARE(readReply(ioc, a), int(RelayReply::Paired));
        QCOMPARE(readReply(ioc, b), int(RelayReply::Paired));
    }

    void refusesUnknownTokensAndStrangers_data()
    {
        QTest::addColumn<QString>("magic");
        QTest::addColumn<bool>("registered");
        QTest::newRow("unknown token") << "RKRELAY1" << false;
        QTest::newRow("bad magic") << "RKRELAY2" << true;
        QTest::newRow("http") << "GET / HTTP/1.1\r\n" << true;
    }

    void refusesUnknownTokensAndStrangers()
    {
        QFETCH(QString, magic);
        QFETCH(bool, registered);
        RelayServer relay(loopback());
        asio::io_context ioc;
        const Token token = registered ? relay.expectPair("node-a", "node-b").first : Token{1, 2, 3};
        const std::string greeting = (magic.toStdString() + tokenToBytes(token)).substr(0, kRelayPreambleBytes);
        auto s = greet(ioc, relay.port(), greeting);
        QCOMPARE(readReply(ioc, s), int(RelayReply::UnknownToken));
        QVERIFY(closedWithin(ioc, s));
        QCOMPARE(relay.counters().refused, uint64_t(1));
        QCOMPARE(relay.counters().pairsOpened, uint64_t(0));
    }

    void partnerMissingAfterPairTimeout()
    {
        auto s = loopback();
        s.pairTimeout = 300ms;
        s.maxPairsPerNode = 1;
        RelayServer relay(s);
        asio::io_context ioc;
        const auto registered = Clock::now();
        const auto [ta, tb] = relay.expectPair("node-a", "node-b");
        auto a = greet(ioc, relay.port(), relayPreamble(ta));
        QCOMPARE(readReply(ioc, a), int(RelayReply::PartnerMissing));
        QVERIFY2(secondsSince(registered) >= 0.25, "answered before the pair timeout");
        QVERIFY(closedWithin(ioc, a));
        auto b = greet(ioc, relay.port(), relayPreamble(tb)); // too late: its token expired
        QCOMPARE(readReply(ioc, b), int(RelayReply::UnknownToken));
        relay.expectPair("node-a", "node-b"); // the expired pair freed both nodes' slots
    }

    void partnerThatLeftMeansPartnerMissing()
    {
        RelayServer relay(loopback());
        asio::io_context ioc;
        std::mutex mutex;
        bool left = false;
        log::setSink([&](log::Level, std::string_view, std::string_view message) {
            std::lock_guard lock(mutex);
            left = left || message.find("left before its partner arrived") != std::string_view::npos;
        });
        const auto [ta, tb] = relay.expectPair("node-a", "node-b");
        {
            auto a = greet(ioc, relay.port(), relayPreamble(ta));
        } // hangs up while waiting
        const bool noticed = test::waitFor(
            [&] {
                std::lock_guard lock(mutex);
                return left;
            },
            kWait);
        log::setSink({});
        QVERIFY(noticed);
        auto b = greet(ioc, relay.port(), relayPreamble(tb));
        QCOMPARE(readReply(ioc, b), int(RelayReply::PartnerMissing));
    }

    void capsThrowClearErrors()
    {
        auto s = loopback();
        s.maxPairsPerNode = 2;
        s.maxPairs = 3;
        RelayServer relay(s);
        asio::io_context ioc;
        auto expectError = [&](const std::string &a, const std::string &b, const std::string &message) {
            try {
                relay.expectPair(a, b);
            } catch (const Error &e) {
                QCOMPARE(std::string(e.what()), message);
                return;
            }
            QFAIL("expectPair() did not throw");
        };
        auto l = link(relay, ioc, "a", "b");
        relay.expectPair("a", "c");
        expectError(
            "d", "a",
            "cannot relay another pair for node 'a': it already has 2 relayed pairs, the most one node may have");
        relay.expectPair("b", "c");
        expectError("d", "e", "cannot relay another pair: the relay is full (3 pairs, its limit is 3)");
        expectError("d", "d", "cannot relay node 'd' to itself");
        l.a.close(); // the spliced pair ends and frees its slots
        QVERIFY(closedWithin(ioc, l.b));
        QVERIFY(test::waitFor([&] { return relay.counters().pairsActive == 0; }, kWait));
        relay.expectPair("a", "d");
    }

    void rateCapHoldsEachDirection()
    {
        auto s = loopback();
        s.bytesPerSecondPerPair = 2 << 20;
        RelayServer relay(s);
        asio::io_context ioc;
        auto l = link(relay, ioc);
        const Bytes ab = randomBytes(1 << 20, 3), ba = randomBytes(1 << 20, 4);
        const auto start = Clock::now();
        const auto [atB, atA] = exchange(ioc, l, ab, ba);
        const double seconds = secondsSince(start);
        QVERIFY(atB == ab && atA == ba);
        // 1 MiB at 2 MiB/s from an empty bucket: 0.5 s, in each direction at once.
        QVERIFY2(seconds >= 0.4, qPrintable(QString("1 MiB took only %1 s").arg(seconds)));
        QVERIFY2(seconds < 5, qPrintable(QString("1 MiB took %1 s").arg(seconds)));
    }

    void closingOneSideFlushesAndClosesTheOther()
    {
        RelayServer relay(loopback());
        asio::io_context ioc;
        auto l = link(relay, ioc);
        const Bytes last = randomBytes(100000, 5);
        asio::write(l.b, asio::buffer(last)); // fits in loopback's buffers
        l.b.close();
        Bytes got(last.size());
        boost::system::error_code ec;
        asio::async_read(l.a, asio::buffer(got), [&](const boost::system::error_code &e, size_t) { ec = e; });
        QVERIFY(runUntil(ioc, [&] { return got.back() == last.back() || ec; }) && !ec);
        QVERIFY(got == last);
        QVERIFY(closedWithin(ioc, l.a));
        QVERIFY(test::waitFor([&] { return relay.counters().pairsActive == 0; }, kWait));
    }

    void idlePairIsClosed()
    {
        auto s = loopback();
        s.idleTimeout = 300ms;
        RelayServer relay(s);
        asio::io_context ioc;
        auto l = link(relay, ioc);
        const auto start = Clock::now();
        QVERIFY(closedWithin(ioc, l.a, 5s));
        QVERIFY(closedWithin(ioc, l.b, 5s));
        QVERIFY(secondsSince(start) >= 0.25);
    }

    void slowGreetingIsClosed()
    {
        auto s = loopback();
        s.preambleTimeout = 200ms;
        RelayServer relay(s);
        asio::io_context ioc;
        auto slow = greet(ioc, relay.port(), std::string(kRelayMagic)); // 8 of the 24 bytes
        QCOMPARE(readReply(ioc, slow, 5s), kClosed);
    }

    void tooManyGreetingsMeansFull()
    {
        auto s = loopback();
        s.maxPendingConnections = 2;
        RelayServer relay(s);
        asio::io_context ioc;
        auto first = connectTo(ioc, relay.port()), second = connectTo(ioc, relay.port());
        auto third = connectTo(ioc, relay.port());
        QCOMPARE(readReply(ioc, third), int(RelayReply::Full));
        QCOMPARE(relay.counters().refused, uint64_t(1));
        asio::write(first, asio::buffer(std::string(kRelayPreambleBytes, 'x'))); // judged: a slot frees
        QCOMPARE(readReply(ioc, first), int(RelayReply::UnknownToken));
        auto fourth = greet(ioc, relay.port(), relayPreamble(relay.expectPair("node-a", "node-b").first));
        QCOMPARE(readReply(ioc, fourth, 300ms), kTimedOut); // waiting for its partner, not refused
    }

    // One host cannot hold every greeting place: its 3rd is refused while another
    // address still gets in.
    void tooManyGreetingsFromOneAddressMeansFull()
    {
        auto s = loopback();
        s.maxPendingPerAddress = 2;
        RelayServer relay(s);
        asio::io_context ioc;
        auto first = connectTo(ioc, relay.port()), second = connectTo(ioc, relay.port());
        auto third = connectTo(ioc, relay.port());
        QCOMPARE(readReply(ioc, third), int(RelayReply::Full));
        auto elsewhere = connectTo(ioc, relay.port(), "127.0.0.2");
        QCOMPARE(readReply(ioc, elsewhere, 300ms), kTimedOut); // greeting, not refused
        QCOMPARE(relay.counters().refused, uint64_t(1));
        asio::write(first, asio::buffer(std::string(kRelayPreambleBytes, 'x'))); // judged: a place frees
        QCOMPARE(readReply(ioc, first), int(RelayReply::UnknownToken));
        auto fourth = connectTo(ioc, relay.port());
        QCOMPARE(readReply(ioc, fourth, 300ms), kTimedOut);
    }

    void tapSeesExactlyTheRelayedBytes()
    {
        RelayServer relay(loopback());
        std::mutex mutex;
        Bytes tapped;
        relay.setTap([&](const uint8_t *data, size_t size) {
            std::lock_guard lock(mutex);
            tapped.insert(tapped.end(), data, data + size);
        });
        asio::io_context ioc;
        auto l = link(relay, ioc);
        const Bytes ab = randomBytes(300000, 6), ba = randomBytes(70000, 7);
        exchange(ioc, l, ab, {});
        exchange(ioc, l, {}, ba);
        relay.setTap({});
        Bytes expected = ab;
        expected.insert(expected.end(), ba.begin(), ba.end());
        std::lock_guard lock(mutex);
        QCOMPARE(tapped.size(), expected.size());
        QVERIFY(tapped == expected);
        QCOMPARE(relay.counters().bytesRelayed, uint64_t(expected.size()));
    }

    void stoppingClosesEveryConnection()
    {
        asio::io_context ioc;
        auto relay = std::make_unique<RelayServer>(loopback());
        auto l = link(*relay, ioc);
        auto waiting = greet(ioc, relay->port(), relayPreamble(relay->expectPair("node-c", "node-d").first));
        auto greeting = connectTo(ioc, relay->port());
        relay.reset();
        QVERIFY(closedWithin(ioc, l.a));
        QVERIFY(closedWithin(ioc, l.b));
        QVERIFY(closedWithin(ioc, waiting));
        QVERIFY(closedWithin(ioc, greeting));
    }

    void describesEveryReply()
    {
        QVERIFY(describeRelayReply(RelayReply::PartnerMissing).find("pair timeout") != std::string::npos);
        QVERIFY(describeRelayReply(RelayReply(9)).find("unknown reply code 9") != std::string::npos);
        const Token t{9, 8, 7};
        QVERIFY(tokenFromBytes(tokenToBytes(t)) == t);
        QVERIFY_THROWS_EXCEPTION(Error, tokenFromBytes("short"));
        QCOMPARE(relayPreamble(t).size(), kRelayPreambleBytes);
    }
};

QTEST_APPLESS_MAIN(TestRelayServer)
#include "tst_relay_server.moc"
