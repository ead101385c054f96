// SPDX-License-Identifier: GPL-3.0-or-later
// Two peer meshes that cannot dial each other link through a relay: the one with the
// smaller id asks, both get grants, and their mutual TLS runs end to end over the
// spliced stream. The relay sees only TLS records: a known message crosses, and its
// text is nowhere in the bytes the relay copied. A relay that drops the stream is asked
// for again; a relayed link leaves the relay once a side can be dialled. Loopback only.
#include <QtTest>

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/net/certificate_authority.h"
#include "engine/net/identity.h"
#include "engine/participant/peer_mesh.h"
#include "engine/relay/relay_server.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

struct Node
{
    net::Identity identity = net::Identity::generate();
    std::unique_ptr<participant::PeerMesh> mesh;
    std::mutex mutex;
    std::vector<std::string> asked;     // peers it asked a relay for
    std::vector<net::Message> received; // from its peer
    std::vector<std::string> problems;  // what it would warn about

    Node(net::NetContext &net, const net::CertificateAuthority &ca,
         std::chrono::milliseconds relayFallbackAfter = std::chrono::seconds(20),
         std::chrono::milliseconds isolatedWarningAfter = std::chrono::seconds(30))
    {
        participant::PeerMesh::Config c;
        c.relayFallbackAfter = relayFallbackAfter;
        c.isolatedWarningAfter = isolatedWarningAfter;
        c.nodeId = identity.nodeId();
        c.credentials = {ca.issue(identity.publicKeyPem()), identity.privateKeyPem(), ca.certificatePem()};
        participant::PeerMesh::Events e;
        e.message = [this](const std::string &, net::Message &&m) {
            std::lock_guard lock(mutex);
            received.push_back(std::move(m));
        };
        e.problem = [this](const std::string &, const std::string &text) {
            std::lock_guard lock(mutex);
            problems.push_back(text);
        };
        e.needRelay = [this](const std::string &peer) {
            std::lock_guard lock(mutex);
            asked.push_back(peer);
        };
        mesh = std::make_unique<participant::PeerMesh>(net, c, e);
    }
    ~Node() { mesh.reset(); }
    // As the coordinator lists it when its check could not dial it.
    participant::PeerAddress behindNat() const { return {identity.nodeId(), "127.0.0.1:1", true}; }
    size_t askedCount()
    {
        std::lock_guard lock(mutex);
        return asked.size();
    }
};

// Two nodes that cannot be dialled, each told so of the other; returns (the one that
// asks for the relay: the smaller id, the one that waits for its grant).
std::pair<Node &, Node &> bothBehindNat(Node &a, Node &b)
{
    Node &asker = a.identity.nodeId() < b.identity.nodeId() ? a : b;
    Node &waiter = &asker == &a ? b : a;
    asker.mesh->setPeers({waiter.behindNat()}, true);
    waiter.mesh->setPeers({asker.behindNat()}, true);
    return {asker, waiter};
}

// What the coordinator does with a relay request: a pair of tickets, one to each; the
// first node dials (TLS client), the second accepts.
void grantPair(relay::RelayServer &server, Node &dialler, Node &acceptor)
{
    const auto [t1, t2] = server.expectPair(dialler.identity.nodeId(), acceptor.identity.nodeId());
    const std::string address = "127.0.0.1:" + std::to_string(server.port());
    dialler.mesh->relayGranted({acceptor.identity.nodeId(), address, relay::tokenToBytes(t1), false, {}});
    acceptor.mesh->relayGranted({dialler.identity.nodeId(), address, relay::tokenToBytes(t2), true, {}});
}

bool bothUp(Node &a, Node &b, std::chrono::milliseconds timeout)
{
    return test::waitFor([&] { return a.mesh->isUp(b.identity.nodeId()) && b.mesh->isUp(a.identity.nodeId()); },
                         timeout);
}

// The node's mesh ticks (as its node does) for `span`.
void tickFor(Node &n, std::chrono::milliseconds span)
{
    const auto until = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < until) {
        n.mesh->tick();
        std::this_thread::sleep_for(20ms);
    }
}

// The node that dials the other (the lower id dials), then the other.
std::pair<Node &, Node &> byDialOrder(Node &a, Node &b)
{
    if (a.identity.nodeId() < b.identity.nodeId())
        return {a, b};
    return {b, a};
}

bool receivedAny(Node &n)
{
    return test::waitFor(
        [&] {
            std::lock_guard lock(n.mutex);
            return !n.received.empty();
        },
        std::chrono::seconds(10));
}

} // namespace

class TestRelayedLink : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void onlyCiphertextCrossesTheRelay()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        relay::RelayServer server({});
        std::mutex tapMutex;
        std::string copied; // every byte the relay copied, both ways
        server.setTap([&](const uint8_t *data, size_t size) {
            std::lock_guard lock(tapMutex);
            copied.append(reinterpret_cast<const char *>(data), size);
        });
        net::NetContext net;
        Node a(net, ca), b(net, ca);
        auto [asker, waiter] = bothBehindNat(a, b);
        QCOMPARE(asker.askedCount(), size_t(1)); // the smaller id asks, at once
        QCOMPARE(waiter.askedCount(), size_t(0));

        grantPair(server, asker, waiter);
        QVERIFY(bothUp(asker, waiter, 15s));

        const std::string secret = "a stage error nobody between us may read: 5f3c8a";
        QCOMPARE(asker.mesh->send(waiter.identity.nodeId(), net::StageError{0, 7, secret}), net::SendResult::Queued);
        QVERIFY(receivedAny(waiter));
        {
            std::lock_guard lock(waiter.mutex);
            const auto *e = std::get_if<net::StageError>(&waiter.received.front());
            QVERIFY(e && e->reason == secret);
        }
        std::lock_guard lock(tapMutex);
        QVERIFY(copied.size() > 1000); // handshakes and the message went through it
        QVERIFY(copied.find(secret) == std::string::npos);
        QVERIFY(copied.find("rookery") == std::string::npos); // not even the WebSocket upgrade
        // TLS records from the first byte: a handshake record (0x16 0x03 0x01).
        QCOMPARE(uint8_t(copied[0]), uint8_t(0x16));
        QVERIFY(server.counters().bytesRelayed >= copied.size());
    }

    // Two volunteers behind one router without hairpin NAT: the address the coordinator
    // gives is right, yet the one that dials cannot reach it from inside. After a while
    // without a link it asks for the relay as well, and the peer accepts the grant.
    void aPeerDialledInVainIsReachedThroughTheRelay()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        relay::RelayServer server({});
        net::NetContext net;
        Node a(net, ca, 300ms), b(net, ca, 300ms);
        auto [dialler, other] = byDialOrder(a, b);
        participant::PeerAddress otherAsSeen{other.identity.nodeId(), "127.0.0.1:1", false}; // refused from here
        dialler.mesh->setPeers({otherAsSeen}, false);
        other.mesh->setPeers({{dialler.identity.nodeId(), "127.0.0.1:1", false}}, false); // it waits to be dialled
        QVERIFY(test::waitFor(
            [&] {
                dialler.mesh->tick();
                return dialler.askedCount() == 1;
            },
            5s));
        QCOMPARE(other.askedCount(), size_t(0));
        {
            // Said as a warning, with the address and why.
            std::lock_guard lock(dialler.mutex);
            QCOMPARE(dialler.problems.size(), size_t(1));
            const std::string &p = dialler.problems.front();
            QVERIFY2(
                p.rfind("cannot reach " + other.identity.nodeId().substr(0, 12) + " at 127.0.0.1:1 directly (", 0) == 0,
                p.c_str());
            QVERIFY2(p.find("refused") != std::string::npos, p.c_str());
            QVERIFY2(p.find("); using the relay") != std::string::npos, p.c_str());
        }
        grantPair(server, dialler, other);
        QVERIFY(bothUp(dialler, other, 15s));
    }

    // Each link times its upload as it opens, with padded pings its peer's link answers:
    // through a relay that holds each direction to 2 MB/s both ends read about that. The
    // probe's pongs are not handed to the node, and a peer no longer wanted has no figure.
    void eachLinkMeasuresItsUpload()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        relay::RelaySettings settings;
        settings.bytesPerSecondPerPair = 2'000'000;
        relay::RelayServer server(settings);
        net::NetContext net;
        Node a(net, ca), b(net, ca);
        auto [asker, waiter] = bothBehindNat(a, b);
        grantPair(server, asker, waiter);
        QVERIFY(bothUp(asker, waiter, 15s));
        const auto measured = [](Node &n) { return !n.mesh->linkFigures().empty(); };
        QVERIFY(test::waitFor(
            [&] {
                a.mesh->tick();
                b.mesh->tick();
                return measured(a) && measured(b);
            },
            30s));
        for (Node *n : {&a, &b}) {
            const Node &peer = n == &a ? b : a;
            const auto figures = n->mesh->linkFigures();
            QCOMPARE(figures.size(), size_t(1));
            const net::LinkFigure &f = figures.front();
            qInfo("upload measured through the relay: %.2f MB/s, round trip %.1f ms", f.uploadBytesPerSecond / 1e6,
                  double(f.roundTripUs) / 1e3);
            QCOMPARE(f.peerId, peer.identity.nodeId());
            QVERIFY2(f.uploadBytesPerSecond > 1.0e6 && f.uploadBytesPerSecond < 2.6e6,
                     qPrintable(QString::number(f.uploadBytesPerSecond)));
            QVERIFY(f.roundTripUs > 0);
            std::lock_guard lock(n->mutex);
            for (const auto &m : n->received)
                QVERIFY(!std::holds_alternative<net::Pong>(m));
        }
        a.mesh->setPeers({}, true);
        QVERIFY(a.mesh->linkFigures().empty());
    }

    // A re-plan takes away a peer this node dialled in vain (it had dropped this node
    // first): no relay is asked for it any more, not even once from the change itself.
    void aPeerNoLongerWantedIsNotAskedFor()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        net::NetContext net;
        Node a(net, ca, 300ms), b(net, ca, 300ms);
        auto [dialler, other] = byDialOrder(a, b);
        dialler.mesh->setPeers({{other.identity.nodeId(), "127.0.0.1:1", false}}, false); // refused from here
        QVERIFY(test::waitFor(
            [&] {
                dialler.mesh->tick();
                return dialler.askedCount() == 1;
            },
            5s));
        dialler.mesh->setPeers({}, false); // the next assignment: not a neighbour any more
        tickFor(dialler, 1s);
        QCOMPARE(dialler.askedCount(), size_t(1));
    }

    // A direct link that was up and drops (the peer restarted its stage, or its Wi-Fi
    // blinked) is dialled again for the fallback's full time before the relay is asked:
    // the time counts from the loss, not from the first dial long ago.
    void aDirectLinkThatDropsIsRedialledBeforeTheRelay()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        net::NetContext net;
        Node a(net, ca, 1500ms), b(net, ca, 1500ms);
        auto [dialler, other] = byDialOrder(a, b);
        const participant::PeerAddress otherReachable{other.identity.nodeId(),
                                                      "127.0.0.1:" + std::to_string(other.mesh->port()), false};
        const participant::PeerAddress diallerAsSeen{dialler.identity.nodeId(), "127.0.0.1:1", false};
        dialler.mesh->setPeers({otherReachable}, false);
        other.mesh->setPeers({diallerAsSeen}, false); // it waits to be dialled
        QVERIFY(bothUp(dialler, other, 10s));
        tickFor(dialler, 2s); // longer than the fallback's time, with the link up
        QCOMPARE(dialler.askedCount(), size_t(0));
        // The other end drops the link, and wants it again at once.
        other.mesh->setPeers({}, false);
        other.mesh->setPeers({diallerAsSeen}, false);
        tickFor(dialler, 1s);
        QCOMPARE(dialler.askedCount(), size_t(0));
        QVERIFY(bothUp(dialler, other, 10s));
    }

    // The relay goes away mid-stream (restarted, crashed): both sides see the link end,
    // the asker asks again, and a new grant links them again.
    void aRelayThatDropsMidStreamIsAskedAgain()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        std::optional<relay::RelayServer> server(std::in_place, relay::RelaySettings{});
        net::NetContext net;
        Node a(net, ca), b(net, ca);
        auto [asker, waiter] = bothBehindNat(a, b);
        grantPair(*server, asker, waiter);
        QVERIFY(bothUp(asker, waiter, 15s));
        QCOMPARE(asker.askedCount(), size_t(1));

        server.reset(); // every relayed connection is cut
        QVERIFY(test::waitFor([&] { return !asker.mesh->isUp(waiter.identity.nodeId()); }, 10s));
        QVERIFY(test::waitFor([&] { return !waiter.mesh->isUp(asker.identity.nodeId()); }, 10s));
        QVERIFY(test::waitFor(
            [&] {
                asker.mesh->tick();
                return asker.askedCount() == 2;
            },
            10s));
        QCOMPARE(waiter.askedCount(), size_t(0)); // the waiter still waits for its grant

        server.emplace(relay::RelaySettings{});
        grantPair(*server, asker, waiter);
        QVERIFY(bothUp(asker, waiter, 15s));
    }

    // One side becomes reachable (its router now forwards the port): the coordinator's
    // next assignment says so, and the link leaves the relay for a direct one.
    void aRelayedLinkUpgradesToDirect()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        relay::RelayServer server({});
        net::NetContext net;
        Node a(net, ca), b(net, ca);
        auto [asker, waiter] = bothBehindNat(a, b);
        grantPair(server, asker, waiter);
        QVERIFY(bothUp(asker, waiter, 15s));
        QCOMPARE(server.counters().pairsActive, uint64_t(1));

        const participant::PeerAddress waiterReachable{waiter.identity.nodeId(),
                                                       "127.0.0.1:" + std::to_string(waiter.mesh->port()), false};
        waiter.mesh->setPeers({asker.behindNat()}, false); // it is dialled now
        asker.mesh->setPeers({waiterReachable}, true);     // and the asker dials it
        QVERIFY(test::waitFor([&] { return server.counters().pairsActive == 0; }, 10s));
        QVERIFY(bothUp(asker, waiter, 15s));
        const uint64_t relayed = server.counters().bytesRelayed;
        const std::string text = "direct now";
        QCOMPARE(asker.mesh->send(waiter.identity.nodeId(), net::StageError{0, 1, text}), net::SendResult::Queued);
        QVERIFY(receivedAny(waiter));
        QCOMPARE(server.counters().bytesRelayed, relayed); // not through the relay
        QCOMPARE(server.counters().pairsOpened, uint64_t(1));
    }

    // A node whose neighbours are all out of reach says so once, and keeps trying.
    void reachingNoNeighbourIsSaid()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        net::NetContext net;
        Node a(net, ca, 60s, 300ms);
        Node ghost(net, ca); // never listened to: its address refuses
        const bool aDials = a.identity.nodeId() < ghost.identity.nodeId();
        a.mesh->setPeers({{ghost.identity.nodeId(), "127.0.0.1:1", false}}, !aDials); // so that a dials
        QVERIFY(test::waitFor(
            [&] {
                a.mesh->tick();
                std::lock_guard lock(a.mutex);
                return !a.problems.empty();
            },
            5s));
        for (int i = 0; i < 5; ++i) // not again within the minute
            a.mesh->tick();
        std::lock_guard lock(a.mutex);
        QCOMPARE(a.problems.size(), size_t(1));
        const std::string &p = a.problems.front();
        QVERIFY2(p.rfind("cannot reach any of its 1 neighbour (", 0) == 0, p.c_str());
        QVERIFY2(p.find("refused") != std::string::npos, p.c_str());
        QVERIFY2(p.find("still trying") != std::string::npos, p.c_str());
    }

    // A refusal (the relay is full, the peer is gone) is said and asked again later,
    // not retried in a loop.
    void aRefusedRelayIsAskedAgainLater()
    {
        net::CertificateAuthority ca = net::CertificateAuthority::create("test swarm");
        net::NetContext net;
        Node a(net, ca), b(net, ca);
        Node &asker = a.identity.nodeId() < b.identity.nodeId() ? a : b;
        Node &waiter = &asker == &a ? b : a;
        asker.mesh->setPeers({waiter.behindNat()}, true);
        asker.mesh->relayGranted({waiter.identity.nodeId(), {}, {}, false, "the relay is full"});
        {
            std::lock_guard lock(asker.mutex);
            QCOMPARE(asker.problems.size(), size_t(1));
            QVERIFY(asker.problems.front().find("the relay is full; asking again later") != std::string::npos);
        }
        asker.mesh->tick();
        QCOMPARE(asker.askedCount(), size_t(1)); // the back-off holds the next ask
        QVERIFY(test::waitFor(
            [&] {
                asker.mesh->tick();
                return asker.askedCount() == 2;
            },
            5s));
    }
};

QTEST_GUILESS_MAIN(TestRelayedLink)
#include "tst_relayed_link.moc"
