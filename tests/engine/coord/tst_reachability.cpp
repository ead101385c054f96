// SPDX-License-Identifier: GPL-3.0-or-later
// Whether peers can dial a volunteer: at registration the coordinator dials the address
// the node advertises and completes a mutual-TLS handshake with the node's own
// certificate, as a peer would; the status API reports the verdict. The planner and the
// relays follow the verdicts. Loopback only.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "engine/coord/coordinator.h"
#include "engine/net/listener.h"
#include "engine/relay/relay_server.h"
#include "tests/engine/coord/coord_test_support.h"
#include "tests/engine/net/link_test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

// A loopback port that was free a moment ago.

struct Verdict
{
    QString reachability, note;
};

Verdict verdictOf(const coord::Coordinator &c, const std::string &nodeId)
{
    const auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(c.statusJson())).object();
    for (const auto &v : doc.value(QStringLiteral("nodes")).toArray()) {
        const auto n = v.toObject();
        if (n.value(QStringLiteral("id")).toString().toStdString() == nodeId)
            return {n.value(QStringLiteral("reachability")).toString(),
                    n.value(QStringLiteral("reachability_note")).toString()};
    }
    return {};
}

int countOf(const coord::Coordinator &c, const char *key)
{
    const auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(c.statusJson())).object();
    return doc.value(QStringLiteral("counts")).toObject().value(QLatin1String(key)).toInt(-1);
}

// The node's own listener, as its peer mesh opens it once registration brings its
// certificate.
std::unique_ptr<net::Listener> listenAs(net::NetContext &net, const test::TestNode &node, uint16_t port,
                                        const std::shared_ptr<test::EventLog> &log)
{
    coord::Registration r;
    {
        std::lock_guard lock(node.mutex);
        r = node.registrations.front();
    }
    net::ListenerConfig lc;
    lc.bindAddress = "127.0.0.1";
    lc.port = port;
    lc.credentials = {r.certificatePem, node.identity.privateKeyPem(), r.caCertificatePem};
    lc.clients.kind = net::PeerCheck::Kind::SwarmCa;
    lc.link.nodeId = node.identity.nodeId();
    return std::make_unique<net::Listener>(net, lc, log->events());
}

// Checks that end within 1.5 s; pipelines of two.
coord::CoordinatorSettings pairSettings(const QTemporaryDir &dir)
{
    auto s = test::testSettings(dir.path().toStdString());
    s.reachabilityTimeout = 1500ms;
    s.clusterSize = 2;
    return s;
}

} // namespace

class TestReachability : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // The node's listener opens after it registers (it needs the certificate): the
    // check waits for it, then succeeds with the node's own identity.
    void aListeningNodeIsReachable()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.reachabilityTimeout = 30s;
        coord::Coordinator c(s);
        net::NetContext net(1);
        const uint16_t port = test::freeLoopbackPort();
        test::TestNode node;
        node.listenAddress = ":" + std::to_string(port); // the host: whatever the coordinator sees
        node.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return node.registrationCount() == 1; }));
        QCOMPARE(verdictOf(c, node.identity.nodeId()).reachability, QStringLiteral("checking"));

        auto log = std::make_shared<test::EventLog>();
        const auto listener = listenAs(net, node, port, log);
        QVERIFY(test::eventually([&] { return verdictOf(c, node.identity.nodeId()).reachability == "direct"; }));
        const Verdict v = verdictOf(c, node.identity.nodeId());
        QVERIFY2(v.note.contains(QStringLiteral("127.0.0.1:%1").arg(port)), qPrintable(v.note));
        QVERIFY(log->openedCount() >= 1); // a real handshake reached the node's listener
        QCOMPARE(countOf(c, "reachable"), 1);
        QCOMPARE(countOf(c, "unreachable"), 0);
    }

    // Nothing listens where the node says (behind NAT, firewalled): unreachable once the
    // check's time is up, with a note that says what to do.
    void aNodeNobodyCanDialIsUnreachable()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.reachabilityTimeout = 1500ms;
        coord::Coordinator c(s);
        net::NetContext net(1);
        test::TestNode node;
        node.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        node.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return verdictOf(c, node.identity.nodeId()).reachability == "unreachable"; }));
        const Verdict v = verdictOf(c, node.identity.nodeId());
        QVERIFY2(v.note.startsWith(QStringLiteral("peers cannot dial it at 127.0.0.1:")), qPrintable(v.note));
        QVERIFY2(v.note.contains(QStringLiteral("UPnP")), qPrintable(v.note));
        QCOMPARE(countOf(c, "unreachable"), 1);
        QVERIFY(node.training() || node.registrationCount() == 1); // still a member: it may be relayed
    }

    // An address that still refuses connections a few seconds into the check (a router
    // that answers for a port it does not forward) is a verdict at once: the check does
    // not wait out its whole timeout, and the crowd behind it in the queue is not held up.
    void anAddressThatRefusesIsUnreachableWithoutTheWholeTimeout()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.reachabilityTimeout = 60s;
        coord::Coordinator c(s);
        net::NetContext net(1);
        test::TestNode node;
        node.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        const auto started = std::chrono::steady_clock::now();
        node.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return node.registrationCount() == 1; }));
        QTest::qWait(1000); // refusals before refusedAfter (2 s) are tried again
        QCOMPARE(verdictOf(c, node.identity.nodeId()).reachability, QStringLiteral("checking"));
        QVERIFY(
            test::eventually([&] { return verdictOf(c, node.identity.nodeId()).reachability == "unreachable"; }, 30s));
        QVERIFY(std::chrono::steady_clock::now() - started < 30s); // not the 60 s timeout
        const Verdict v = verdictOf(c, node.identity.nodeId());
        QVERIFY2(v.note.contains(QStringLiteral("nothing listens there")), qPrintable(v.note));
        QVERIFY2(v.note.contains(QStringLiteral("UPnP")), qPrintable(v.note));
        QVERIFY(test::eventually([&] { return node.training(); }, 10s)); // placed with its verdict
    }

    // A node that advertises another node's address (a mistake, or a lie) is not
    // reachable there: the handshake checks whose certificate answers.
    void anotherNodesAddressIsNotThisNode()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.reachabilityTimeout = 5s;
        coord::Coordinator c(s);
        net::NetContext net(1);
        const uint16_t port = test::freeLoopbackPort();
        test::TestNode honest, borrower;
        honest.listenAddress = borrower.listenAddress = "127.0.0.1:" + std::to_string(port);
        honest.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return honest.registrationCount() == 1; }));
        auto log = std::make_shared<test::EventLog>();
        const auto listener = listenAs(net, honest, port, log);
        QVERIFY(test::eventually([&] { return verdictOf(c, honest.identity.nodeId()).reachability == "direct"; }));

        borrower.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(
            test::eventually([&] { return verdictOf(c, borrower.identity.nodeId()).reachability == "unreachable"; }));
        QCOMPARE(verdictOf(c, honest.identity.nodeId()).reachability, QStringLiteral("direct"));
    }

    // The verdict travels in the assignments, so each pair agrees on who dials: the
    // node behind NAT learns that it must dial, its neighbour that it must wait.
    void assignmentsSayWhoCannotBeDialled()
    {
        QTemporaryDir dir;
        coord::Coordinator c(pairSettings(dir));
        net::NetContext net(1);
        const uint16_t port = test::freeLoopbackPort();
        test::TestNode open, behindNat;
        open.listenAddress = "127.0.0.1:" + std::to_string(port);
        behindNat.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        open.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return open.registrationCount() == 1; }));
        auto log = std::make_shared<test::EventLog>();
        const auto listener = listenAs(net, open, port, log);
        behindNat.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        const auto partnerOf = [](const coord::Assignment &a) { return a.next.empty() ? a.previous : a.next; };
        QVERIFY(test::eventually([&] {
            const auto a = open.assignment(), b = behindNat.assignment();
            return a.isTraining() && b.isTraining() && b.unreachable && partnerOf(a).unreachable;
        }));
        const auto a = open.assignment(), b = behindNat.assignment();
        QVERIFY(!a.unreachable);
        QCOMPARE(partnerOf(a).nodeId, behindNat.identity.nodeId());
        QCOMPARE(partnerOf(b).nodeId, open.identity.nodeId());
        QVERIFY(!partnerOf(b).unreachable);
    }

    // A newcomer to a working swarm is placed with its verdict: until its check ends it
    // waits, saying so; every placement it is then given already says that peers cannot
    // dial it, so neither it nor its neighbours are re-told who dials whom for it.
    void aNewcomerIsPlacedOnceItsVerdictIsIn()
    {
        QTemporaryDir dir;
        coord::Coordinator c(pairSettings(dir)); // checks end within 1.5 s
        net::NetContext net(1);
        test::TestNode first, late;
        first.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        late.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        first.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return first.training(); }, 10s));
        QVERIFY(first.assignment().unreachable); // placed with its verdict too

        late.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return late.registrationCount() == 1; }));
        const auto registered = std::chrono::steady_clock::now();
        {
            std::lock_guard lock(late.mutex);
            const std::string reason = late.registrations.front().assignment.reason;
            QVERIFY2(reason.find("checking whether peers can reach this node") != std::string::npos, reason.c_str());
        }
        QCOMPARE(verdictOf(c, late.identity.nodeId()).reachability, QStringLiteral("checking"));
        QTest::qWait(700); // its check cannot fail before 1.5 s
        QVERIFY(!late.training());
        QVERIFY(test::eventually([&] { return late.training(); }, 10s));
        QVERIFY(std::chrono::steady_clock::now() - registered >= 1400ms);
        QCOMPARE(verdictOf(c, late.identity.nodeId()).reachability, QStringLiteral("unreachable"));
        QTest::qWait(4000); // a storm's held growth is told within stormSettle (3 s)
        std::lock_guard lock(late.mutex);
        QVERIFY(!late.updates.empty());
        for (const auto &a : late.updates)
            QVERIFY2(!a.isTraining() || a.unreachable, a.describe().c_str());
    }

    // A newcomer that cannot be placed (no stage fits its memory) is told, once its check
    // ends, that peers cannot dial it and why it waits: not "checking" for as long as it
    // waits.
    void aNewcomerThatWaitsHearsHowItsCheckEnded()
    {
        QTemporaryDir dir;
        coord::Coordinator c(pairSettings(dir)); // checks end within 1.5 s
        net::NetContext net(1);
        test::TestNode first, small;
        first.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        small.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        first.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return first.training(); }, 10s));
        small.start(net, c.coordinatorAddress(), 10, 1ull << 10); // 1 KiB: no stage fits
        QVERIFY(test::eventually([&] { return small.registrationCount() == 1; }));
        QVERIFY(test::eventually(
            [&] { return verdictOf(c, small.identity.nodeId()).reachability == QStringLiteral("unreachable"); }, 10s));
        QVERIFY(test::eventually([&] { return small.assignment().unreachable; }, 10s));
        const auto a = small.assignment();
        QVERIFY(!a.isTraining());
        QVERIFY2(a.reason.find("checking whether peers can reach") == std::string::npos, a.reason.c_str());
        QVERIFY2(a.reason.rfind("waiting: ", 0) == 0, a.reason.c_str());
        QVERIFY(first.training()); // nobody else was moved for it
    }

    // Arrivals within stormSettle of each other are a storm: a newcomer the planner
    // leaves waiting then hears its verdict only once the storm is over (nobody dials a
    // waiting node), in one push; until then it still says its check is under way.
    void aNewcomerLeftWaitingInAStormHearsItsVerdictWhenItIsOver()
    {
        QTemporaryDir dir;
        auto s = pairSettings(dir); // checks end within 1.5 s
        s.stormSettle = 8s;         // the storm lasts 8 s past the last arrival
        coord::Coordinator c(s);
        net::NetContext net(1);
        test::TestNode first, small;
        first.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        small.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        first.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] { return first.training(); }, 20s));
        small.start(net, c.coordinatorAddress(), 10, 1ull << 10); // 1 KiB: no stage fits
        QVERIFY(test::eventually([&] { return small.registrationCount() == 1; }));
        const size_t heardAtRegistration = small.updateCount();
        QVERIFY(test::eventually(
            [&] { return verdictOf(c, small.identity.nodeId()).reachability == QStringLiteral("unreachable"); }, 10s));
        // The check is over; the storm it came in is not. (Without the hold its verdict
        // would come within a planning round, 20 ms here.)
        QTest::qWait(2000);
        const auto during = small.assignment();
        QVERIFY2(during.reason == coord::kCheckingReachability, during.reason.c_str());
        QVERIFY(!during.unreachable);
        QCOMPARE(small.updateCount(), heardAtRegistration);
        // Once it is over: the verdict and why it waits, in one push.
        QVERIFY(test::eventually([&] { return small.assignment().unreachable; }, 20s));
        const auto after = small.assignment();
        QVERIFY(!after.isTraining());
        QVERIFY2(after.reason != coord::kCheckingReachability, after.reason.c_str());
        QCOMPARE(small.updateCount(), heardAtRegistration + 1);
    }

    // Two volunteers behind NAT and one that can be dialled, all alike, in a pipeline of
    // three: the planner puts the reachable one in the middle, so that neither of its
    // links needs the relay.
    void thePlannerPutsTheReachableOneBetween()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.reachabilityTimeout = 1500ms;
        s.clusterSize = 3;
        s.expectNodes = 3;
        s.firstPlanDelay = 60s; // plan once all three are in and checked
        coord::Coordinator c(s);
        net::NetContext net(1);
        const uint16_t port = test::freeLoopbackPort();
        test::TestNode open, natA, natB;
        open.listenAddress = "127.0.0.1:" + std::to_string(port);
        natA.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        natB.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        open.start(net, c.coordinatorAddress(), 10, 1ull << 30); // registers first: index 0
        QVERIFY(test::eventually([&] { return open.registrationCount() == 1; }));
        auto log = std::make_shared<test::EventLog>();
        const auto listener = listenAs(net, open, port, log);
        natA.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        natB.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        QVERIFY(test::eventually([&] {
            return open.assignment().isTraining() && natA.assignment().isTraining() && natB.assignment().isTraining();
        }));
        const auto a = open.assignment();
        QCOMPARE(a.stages, 3);
        QCOMPARE(a.stage, 1);
        QVERIFY(natA.assignment().unreachable && natB.assignment().unreachable);
        QVERIFY(a.previous.unreachable && a.next.unreachable); // both neighbours dial it
    }

    // A volunteer that offers a relay (and can be dialled) carries a pair instead of the
    // coordinator: its relay learns the pair's tokens (RelayExpect), the two get grants
    // naming it, and its relay splices them.
    void aVolunteersRelayCarriesThePair()
    {
        QTemporaryDir dir;
        coord::Coordinator c(pairSettings(dir));
        net::NetContext net(1);
        relay::RelaySettings rs;
        rs.bindAddress = "127.0.0.1";
        relay::RelayServer volunteersRelay(rs);
        test::TestNode volunteer, natA, natB;
        // Two behind NAT make one pipeline of two; the volunteer comes after, too slow and
        // small to be worth a stage: it only relays.
        natA.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        natB.listenAddress = "127.0.0.1:" + std::to_string(test::freeLoopbackPort());
        natA.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        natB.start(net, c.coordinatorAddress(), 10, 1ull << 30);
        const auto partnerOf = [](const coord::Assignment &a) { return a.next.empty() ? a.previous : a.next; };
        QVERIFY(test::eventually([&] {
            const auto a = natA.assignment(), b = natB.assignment();
            return a.isTraining() && b.isTraining() && a.unreachable && b.unreachable &&
                   partnerOf(a).nodeId == natB.identity.nodeId();
        }));
        const uint16_t port = test::freeLoopbackPort();
        volunteer.listenAddress = "127.0.0.1:" + std::to_string(port);
        volunteer.relayPort = volunteersRelay.port();
        volunteer.start(net, c.coordinatorAddress(), 0.001, 1024); // no layer fits: it cannot be given a stage
        QVERIFY(test::eventually([&] { return volunteer.registrationCount() == 1; }));
        auto log = std::make_shared<test::EventLog>();
        const auto listener = listenAs(net, volunteer, port, log);
        QVERIFY(test::eventually(
            [&] { return verdictOf(c, volunteer.identity.nodeId()).reachability == QLatin1String("direct"); }));
        QVERIFY(!volunteer.assignment().isTraining());
        test::TestNode &asker = natA.identity.nodeId() < natB.identity.nodeId() ? natA : natB;
        test::TestNode &other = &asker == &natA ? natB : natA;
        QVERIFY(asker.client->requestRelay(other.identity.nodeId()));
        const auto granted = [](test::TestNode &n) {
            std::lock_guard lock(n.mutex);
            return !n.grants.empty();
        };
        QVERIFY2(test::eventually([&] { return granted(asker) && granted(other); }), [&] {
            std::lock_guard lock(asker.mutex);
            static std::string why;
            why = asker.grants.empty() ? "no grant" : "refused: " + asker.grants.front().reason;
            return why.c_str();
        }());
        QVERIFY(test::eventually([&] {
            std::lock_guard lock(volunteer.mutex);
            return !volunteer.expects.empty();
        }));
        net::RelayGrant mine, theirs;
        net::RelayExpect expect;
        {
            std::scoped_lock lock(asker.mutex, other.mutex, volunteer.mutex);
            mine = asker.grants.front();
            theirs = other.grants.front();
            expect = volunteer.expects.front();
        }
        const std::string relayAddress = "127.0.0.1:" + std::to_string(volunteersRelay.port());
        QCOMPARE(mine.address, relayAddress);
        QCOMPARE(theirs.address, relayAddress);
        QVERIFY(!mine.accept && theirs.accept);
        QCOMPARE(expect.nodeA, asker.identity.nodeId());
        QCOMPARE(expect.nodeB, other.identity.nodeId());
        QCOMPARE(expect.tokenA, mine.token);
        QCOMPARE(expect.tokenB, theirs.token);

        // What the volunteer's node does with it; then both ends meet there.
        volunteersRelay.expectPair(expect.nodeA, expect.nodeB, relay::tokenFromBytes(expect.tokenA),
                                   relay::tokenFromBytes(expect.tokenB));
        boost::asio::io_context ioc;
        const boost::asio::ip::tcp::endpoint at(boost::asio::ip::make_address("127.0.0.1"), volunteersRelay.port());
        boost::asio::ip::tcp::socket a(ioc), b(ioc);
        a.connect(at);
        b.connect(at);
        boost::asio::write(a, boost::asio::buffer(relay::relayPreamble(relay::tokenFromBytes(mine.token))));
        boost::asio::write(b, boost::asio::buffer(relay::relayPreamble(relay::tokenFromBytes(theirs.token))));
        uint8_t replyA = 0xff, replyB = 0xff;
        boost::asio::read(a, boost::asio::buffer(&replyA, 1));
        boost::asio::read(b, boost::asio::buffer(&replyB, 1));
        QCOMPARE(replyA, uint8_t(0)); // paired
        QCOMPARE(replyB, uint8_t(0));
        QCOMPARE(volunteersRelay.counters().pairsOpened, uint64_t(1));
    }
};

QTEST_GUILESS_MAIN(TestReachability)
#include "tst_reachability.moc"
