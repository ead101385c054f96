// SPDX-License-Identifier: GPL-3.0-or-later
// Registration over loopback TLS with a real coordinator and real clients: the round
// trip, and the refusals (malformed profile, unknown node, forged certificates,
// replayed registrations), each with a clear error.
#include <QtTest>

#include <QTemporaryDir>

#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include <openssl/x509.h>

#include "engine/common/error.h"
#include "engine/common/wall_clock.h"
#include "engine/net/certificate_authority.h"
#include "engine/net/dialer.h"
#include "engine/net/listener.h"
#include "engine/net/openssl_util.h"
#include "tests/engine/coord/coord_test_support.h"
#include "tests/engine/net/link_test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

std::string randomNonce()
{
    static std::mt19937_64 rng(std::random_device{}());
    std::string n(16, '\0');
    for (auto &c : n)
        c = char(rng());
    return n;
}

// A node that speaks to the coordinator by hand, to send what our client never would.
struct RawNode
{
    net::Identity id = net::Identity::generate();
    std::shared_ptr<test::EventLog> log = std::make_shared<test::EventLog>();
    std::shared_ptr<net::Link> link;

    void dial(net::NetContext &ctx, const net::CoordinatorAddress &address, std::string certificate = {},
              std::string helloId = {})
    {
        net::LinkConfig lc;
        lc.nodeId = helloId.empty() ? id.nodeId() : helloId;
        lc.handshakeTimeout = 5s;
        auto dc = net::coordinatorDialConfig(
            address, {certificate.empty() ? id.selfSignedCertificate() : certificate, id.privateKeyPem(), ""}, lc);
        dc.reconnect = false;
        link = net::dial(ctx, dc, log->events());
    }
    bool open()
    {
        return test::eventually([&] { return log->openedCount() == 1; }, 10s);
    }
    net::Register registration(std::string nonce = {}, int64_t timestampMs = 0) const
    {
        net::Register r;
        r.name = "raw";
        r.listenAddress = "127.0.0.1:7999";
        r.profileJson = test::profileJson(50, uint64_t(test::mlpDemandBytes()) * 2);
        r.nonce = nonce.empty() ? randomNonce() : nonce;
        r.timestampMs = timestampMs ? timestampMs : nowMs();
        r.publicKeyPem = id.publicKeyPem();
        return r;
    }
    /// The first message of type T, waiting for it.
    template <class T> std::optional<T> await()
    {
        std::optional<T> found;
        test::eventually(
            [&] {
                std::lock_guard lock(log->mutex);
                for (const auto &m : log->messages)
                    if (auto *t = std::get_if<T>(&m)) {
                        found = *t;
                        return true;
                    }
                return false;
            },
            10s);
        return found;
    }
    bool closed()
    {
        return test::eventually([&] { return log->closedCount() > 0; }, 10s);
    }
};

// A certificate for `key` with any common name, signed by `issuer` (or self-signed).
std::string forgeCertificate(const net::Identity &key, const std::string &commonName,
                             const net::CertificateAuthority *issuer)
{
    auto subject = net::ossl::privateKeyFromPem(key.privateKeyPem(), "key");
    const auto now = std::chrono::system_clock::now();
    if (!issuer)
        return net::ossl::certificatePem(
            net::ossl::makeCertificate(subject.get(), commonName, nullptr, subject.get(), now - 1h, now + 24h, false)
                .get());
    auto caKey = net::ossl::privateKeyFromPem(issuer->privateKeyPem(), "CA key");
    auto caCert = net::ossl::certificateFromPem(issuer->certificatePem(), "CA certificate");
    return net::ossl::certificatePem(
        net::ossl::makeCertificate(subject.get(), commonName, caCert.get(), caKey.get(), now - 1h, now + 24h, false)
            .get());
}

} // namespace

class TestCoordinatorRegistration : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_dataDir; // a fresh one per test
    int m_round = 0;
    std::unique_ptr<net::NetContext> m_net;
    std::unique_ptr<coord::Coordinator> m_coordinator;

    net::CoordinatorAddress address() const { return m_coordinator->coordinatorAddress(); }
    uint64_t bigEnough() const { return uint64_t(test::mlpDemandBytes()) * 2; }

private Q_SLOTS:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_net = std::make_unique<net::NetContext>(1);
        m_dataDir = m_dir.filePath(QStringLiteral("coord-%1").arg(++m_round));
        m_coordinator = std::make_unique<coord::Coordinator>(test::testSettings(m_dataDir.toStdString()));
    }

    void cleanup()
    {
        m_coordinator.reset();
        m_net.reset();
    }

    void registersAndReceivesCertificateRunAndAssignment()
    {
        test::TestNode n;
        n.start(*m_net, address(), 50, bigEnough());
        QVERIFY(test::eventually([&] { return n.registrationCount() == 1; }));
        const auto reg = *n.client->registration();
        QCOMPARE(reg.nodeId, n.identity.nodeId());
        QCOMPARE(net::certificateNodeId(reg.certificatePem), n.identity.nodeId());
        QCOMPARE(reg.caCertificatePem, m_coordinator->caCertificatePem());
        QCOMPARE(reg.run.model, model::mlpSpec());
        QCOMPARE(reg.run.runId, m_coordinator->run().runId);
        QCOMPARE(reg.heartbeatInterval, 100ms);
        // One node holds the MLP alone: the first plan makes it a cluster of one.
        QVERIFY(test::eventually([&] { return n.training(); }));
        const auto a = n.assignment();
        QCOMPARE(a.cluster, 0);
        QCOMPARE(a.stages, 1);
        QCOMPARE(a.firstLayer, size_t(0));
        QCOMPARE(a.lastLayer, model::mlpSpec().layers.size());
        QVERIFY(a.previous.empty() && a.next.empty() && a.weightsFrom.empty());
        QCOMPARE(a.shard.count, 1);
        QVERIFY(a.version >= reg.assignment.version); // equal when, under load, the first plan came before the reply
        QVERIFY(test::eventually([&] { return n.client->stats().heartbeatsAcked >= 3; }));
        QVERIFY(n.client->stats().lastRoundTrip.count() > 0);
        QVERIFY(m_coordinator->counters().heartbeats >= 3);
        QVERIFY(n.lastError().empty());
    }

    // A node measures its upload on the coordinator's link before it registers (padded
    // pings, which the coordinator's link answers itself), and the planner gets that
    // figure, within the volunteer's upload cap.
    void theMeasuredUploadWithinItsCapIsWhatThePlannerGets()
    {
        test::TestNode free, capped;
        free.measureUpload = capped.measureUpload = true;
        capped.uploadCap = 250e3; // 250 kB/s: far below what loopback measures
        free.start(*m_net, address(), 50, bigEnough());
        capped.start(*m_net, address(), 50, bigEnough());
        QVERIFY(test::eventually([&] { return free.registrationCount() == 1 && capped.registrationCount() == 1; }));
        auto measured = [](test::TestNode &n) {
            std::lock_guard lock(n.mutex);
            return n.uploadsMeasured;
        };
        QCOMPARE(measured(free).size(), size_t(1));
        QCOMPARE(measured(capped).size(), size_t(1));
        // Loopback through TLS: tens of MB/s at the very least, on any machine.
        QVERIFY2(measured(free)[0] > 10e6, std::to_string(measured(free)[0]).c_str());
        const auto status = nlohmann::json::parse(m_coordinator->statusJson());
        std::map<std::string, nlohmann::json> byId;
        for (const auto &n : status.at("nodes"))
            byId[n.at("id").get<std::string>()] = n;
        const auto &f = byId.at(free.identity.nodeId());
        QCOMPARE(f.at("upload_assumed").get<bool>(), false);
        QCOMPARE(f.at("upload_bytes_per_second").get<double>(), measured(free)[0]);
        const auto &c = byId.at(capped.identity.nodeId());
        QCOMPARE(c.at("upload_assumed").get<bool>(), false);
        QCOMPARE(c.at("upload_bytes_per_second").get<double>(), 250e3);
    }

    void issuedCertificatesWorkBetweenPeersAndForgedOnesAreRefused()
    {
        test::TestNode a, b;
        a.start(*m_net, address(), 50, bigEnough());
        b.start(*m_net, address(), 50, bigEnough());
        QVERIFY(test::eventually([&] { return a.registrationCount() == 1 && b.registrationCount() == 1; }));
        const auto ra = *a.client->registration(), rb = *b.client->registration();
        // A peer link between the two, each presenting what the coordinator signed.
        net::ListenerConfig lc;
        lc.bindAddress = "127.0.0.1";
        lc.credentials = {ra.certificatePem, a.identity.privateKeyPem(), ra.caCertificatePem};
        lc.link.nodeId = a.identity.nodeId();
        net::Listener peer(*m_net, lc, {});
        auto dialPeer = [&](const net::Identity &who, const std::string &certificate) {
            net::DialConfig d;
            d.host = "127.0.0.1";
            d.port = peer.port();
            d.credentials = {certificate, who.privateKeyPem(), ra.caCertificatePem};
            d.link.nodeId = who.nodeId();
            d.reconnect = false;
            auto log = std::make_shared<test::EventLog>();
            auto link = net::dial(*m_net, d, log->events());
            test::eventually([&] { return log->openedCount() == 1 || log->closedCount() == 1; });
            link->close();
            return log;
        };
        QCOMPARE(dialPeer(b.identity, rb.certificatePem)->openedCount(), 1);
        // Forged: the same key, certified by another swarm's CA.
        test::LogCapture logs;
        const auto elsewhere = net::CertificateAuthority::create("elsewhere");
        auto refused = dialPeer(b.identity, elsewhere.issue(b.identity.publicKeyPem()));
        QCOMPARE(refused->openedCount(), 0);
        QVERIFY2(refused->lastClose().fatal, refused->lastClose().reason.c_str());
        QVERIFY(test::eventually([&] { return logs.contains("is not issued by this swarm's CA"); }));
        // Forged: signed by the swarm CA itself, but naming node a while holding c's key.
        const auto swarmCa = net::CertificateAuthority::loadOrCreate(m_dataDir.toStdString(), "test swarm");
        const net::Identity c = net::Identity::generate();
        refused = dialPeer(c, forgeCertificate(c, a.identity.nodeId(), &swarmCa));
        QCOMPARE(refused->openedCount(), 0);
        QVERIFY(test::eventually([&] { return logs.contains("is not the fingerprint of its key"); }));

        // At the coordinator a certificate's name counts for nothing: the key does.
        const auto before = m_coordinator->assignments().at(a.identity.nodeId());
        RawNode impostor;
        impostor.id = c;
        impostor.dial(*m_net, address(), forgeCertificate(c, a.identity.nodeId(), nullptr), a.identity.nodeId());
        QVERIFY(impostor.closed()); // claiming a's id in the Hello: refused by the transport
        QCOMPARE(impostor.log->openedCount(), 0);
        QVERIFY(test::eventually([&] { return logs.contains("the Hello names node"); }));
        RawNode honest;
        honest.id = c;
        honest.dial(*m_net, address(), forgeCertificate(c, a.identity.nodeId(), nullptr));
        QVERIFY(honest.open());
        QCOMPARE(honest.link->send(honest.registration()), net::SendResult::Queued);
        const auto reply = honest.await<net::RegisterReply>();
        QVERIFY(reply.has_value());
        QCOMPARE(reply->nodeId, c.nodeId()); // registered as the key's node, not as a
        QCOMPARE(net::certificateNodeId(reply->certificatePem), c.nodeId());
        // a keeps its seat and its link; c is a node of its own.
        const auto after = m_coordinator->assignments().at(a.identity.nodeId());
        QCOMPARE(after.cluster, before.cluster);
        QCOMPARE(after.stage, before.stage);
        QVERIFY(a.client->isRegistered());
        QCOMPARE(m_coordinator->counters().nodesKnown, size_t(3));
    }

    void malformedProfileIsRefused_data()
    {
        QTest::addColumn<QString>("profile");
        QTest::addColumn<QString>("says");
        QTest::newRow("not JSON") << "{not json"
                                  << "the capability profile is malformed: capability profile is not valid JSON";
        QTest::newRow("missing field") << "{}"
                                       << "cpu_model";
        QTest::newRow("nothing measured")
            << QString::fromStdString(test::profileJson(0, 1 << 30)) << "no measured compute";
    }

    void malformedProfileIsRefused()
    {
        QFETCH(QString, profile);
        QFETCH(QString, says);
        test::TestNode n;
        n.start(*m_net, address(), 0, 0, profile.toStdString());
        QVERIFY(test::eventually([&] { return !n.lastError().empty(); }));
        QVERIFY2(QString::fromStdString(n.lastError()).contains(says), n.lastError().c_str());
        QVERIFY(n.lastError().find("the coordinator refused this node") == 0);
        QCOMPARE(n.registrationCount(), size_t(0));
        // A refusal is final: the client does not keep knocking.
        QTest::qWait(300);
        QVERIFY(!n.client->isConnected());
        QCOMPARE(m_coordinator->counters().refusals, uint64_t(1));
    }

    void malformedFieldsAreRefused_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("says");
        QTest::newRow("listen address") << 0 << "is not host:port";
        QTest::newRow("port") << 1 << "has a bad port";
        QTest::newRow("short nonce") << 2 << "nonce must be 16 bytes";
        QTest::newRow("another key") << 3 << "is not the key this link's certificate proved";
        QTest::newRow("not a key") << 4 << "public key is not a PEM key";
        QTest::newRow("bandwidth") << 5 << "upload_bytes_per_second";
    }

    void malformedFieldsAreRefused()
    {
        QFETCH(int, kind);
        QFETCH(QString, says);
        RawNode n;
        n.dial(*m_net, address());
        QVERIFY(n.open());
        auto r = n.registration();
        if (kind == 0)
            r.listenAddress = "nohost";
        else if (kind == 1)
            r.listenAddress = "10.0.0.1:99999";
        else if (kind == 2)
            r.nonce = "abc";
        else if (kind == 3)
            r.publicKeyPem = net::Identity::generate().publicKeyPem();
        else if (kind == 4)
            r.publicKeyPem = "hello";
        else
            r.uploadBytesPerSecond = -1;
        QCOMPARE(n.link->send(r), net::SendResult::Queued);
        const auto err = n.await<net::CoordinatorError>();
        QVERIFY(err.has_value());
        QCOMPARE(err->code, net::CoordinatorErrorCode::BadRequest);
        QVERIFY2(QString::fromStdString(err->reason).contains(says), err->reason.c_str());
        QVERIFY(n.closed());
    }

    void heartbeatFromAnUnknownNodeIsRefused()
    {
        RawNode n;
        n.dial(*m_net, address());
        QVERIFY(n.open());
        QCOMPARE(n.link->send(net::Heartbeat{1, 0, {}}), net::SendResult::Queued);
        const auto err = n.await<net::CoordinatorError>();
        QVERIFY(err.has_value());
        QCOMPARE(err->code, net::CoordinatorErrorCode::UnknownNode);
        QVERIFY2(err->reason.find("unknown node " + n.id.nodeId().substr(0, 12)) == 0, err->reason.c_str());
        QVERIFY(n.closed());
    }

    void heartbeatBeforeRegisteringIsRefused()
    {
        test::TestNode known;
        known.start(*m_net, address(), 50, bigEnough());
        QVERIFY(test::eventually([&] { return known.registrationCount() == 1; }));
        RawNode n;
        n.id = known.identity; // a known node, on a link that has not registered
        n.dial(*m_net, address());
        QVERIFY(n.open());
        QCOMPARE(n.link->send(net::Heartbeat{1, 0, {}}), net::SendResult::Queued);
        const auto err = n.await<net::CoordinatorError>();
        QVERIFY(err.has_value());
        QCOMPARE(err->code, net::CoordinatorErrorCode::NotRegistered);
        QVERIFY2(err->reason.find("has not registered on this connection") != std::string::npos, err->reason.c_str());
    }

    // One Register per link: a second one (a profile of up to 16 MiB each time) is
    // refused and the link closed.
    void aSecondRegisterOnOneLinkIsRefused()
    {
        RawNode n;
        n.dial(*m_net, address());
        QVERIFY(n.open());
        QCOMPARE(n.link->send(n.registration()), net::SendResult::Queued);
        QVERIFY(n.await<net::RegisterReply>().has_value());
        QCOMPARE(n.link->send(n.registration()), net::SendResult::Queued);
        const auto err = n.await<net::CoordinatorError>();
        QVERIFY(err.has_value());
        QCOMPARE(err->code, net::CoordinatorErrorCode::BadRequest);
        QVERIFY2(err->reason.find("one Register per connection") != std::string::npos, err->reason.c_str());
        QVERIFY(n.closed());
    }

    // A link that opens and never registers (its pongs keep it alive) is closed once the
    // registration timeout has passed, not before.
    void aLinkThatNeverRegistersIsClosed()
    {
        m_coordinator.reset();
        auto settings = test::testSettings((m_dataDir + QStringLiteral("-timeout")).toStdString());
        settings.registerTimeout = 400ms;
        m_coordinator = std::make_unique<coord::Coordinator>(settings);
        RawNode n;
        n.dial(*m_net, address());
        QVERIFY(n.open());
        QTest::qWait(100);
        QCOMPARE(n.log->closedCount(), 0);
        QVERIFY(n.closed());
        QVERIFY(!n.await<net::RegisterReply>().has_value());
    }

    // The heartbeat interval grows with the swarm. With a budget of 20 heartbeats a
    // second, three nodes at 100 ms (30 a second) are told 500 ms (150 ms, rounded up to
    // a half second) and keep to it; a node told 500 ms that falls silent is lost after
    // three of its intervals, not after the 600 ms timeout meant for 100 ms.
    void aLargerSwarmIsToldALongerHeartbeatInterval()
    {
        m_coordinator.reset();
        auto settings = test::testSettings((m_dataDir + QStringLiteral("-pace")).toStdString());
        settings.heartbeatBudget = 20;
        m_coordinator = std::make_unique<coord::Coordinator>(settings);
        std::vector<std::unique_ptr<test::TestNode>> nodes;
        for (int i = 0; i < 3; ++i) {
            nodes.push_back(std::make_unique<test::TestNode>());
            nodes.back()->start(*m_net, address(), 50, bigEnough());
        }
        QVERIFY(test::eventually(
            [&] {
                return std::all_of(nodes.begin(), nodes.end(),
                                   [](const auto &n) { return n->client->stats().heartbeatInterval == 500ms; });
            },
            10s));
        std::vector<uint64_t> before;
        for (const auto &n : nodes)
            before.push_back(n->client->stats().heartbeatsSent);
        QTest::qWait(2000);
        for (size_t i = 0; i < nodes.size(); ++i) {
            const uint64_t sent = nodes[i]->client->stats().heartbeatsSent - before[i];
            QVERIFY2(sent >= 2 && sent <= 6, qPrintable(QStringLiteral("%1 heartbeats in 2 s").arg(sent)));
        }

        RawNode silent;
        silent.dial(*m_net, address());
        QVERIFY(silent.open());
        QCOMPARE(silent.link->send(silent.registration()), net::SendResult::Queued);
        const auto reply = silent.await<net::RegisterReply>();
        QVERIFY(reply.has_value());
        QCOMPARE(reply->heartbeatIntervalMs, 500u);
        const auto lostCount = [&] {
            const std::string json = m_coordinator->statusJson(), lost = "\"presence\":\"lost\"";
            int count = 0;
            for (auto at = json.find(lost); at != std::string::npos; at = json.find(lost, at + 1))
                ++count;
            return count;
        };
        QTest::qWait(1000); // past the 600 ms timeout, within 1.5 s
        QVERIFY2(lostCount() == 0, "a node told 500 ms was lost after 1 s of silence");
        QVERIFY(test::eventually([&] { return lostCount() == 1; }, 5s));
        QTest::qWait(1000); // the others, heartbeating every 500 ms, never are
        QCOMPARE(lostCount(), 1);
    }

    void replayedRegistrationIsRefused()
    {
        RawNode first;
        first.dial(*m_net, address());
        QVERIFY(first.open());
        const auto r = first.registration();
        QCOMPARE(first.link->send(r), net::SendResult::Queued);
        QVERIFY(first.await<net::RegisterReply>().has_value());
        // Someone who recorded it sends it again on a link of its own (with the same key:
        // the only way a registration can be bound to it).
        RawNode replay;
        replay.id = first.id;
        replay.dial(*m_net, address());
        QVERIFY(replay.open());
        QCOMPARE(replay.link->send(r), net::SendResult::Queued);
        auto err = replay.await<net::CoordinatorError>();
        QVERIFY(err.has_value());
        QCOMPARE(err->code, net::CoordinatorErrorCode::Replay);
        QVERIFY2(err->reason.find("nonce was seen before") != std::string::npos, err->reason.c_str());
        QVERIFY(replay.closed());
        // A fresh nonce with a stale timestamp.
        RawNode stale;
        stale.id = first.id;
        stale.dial(*m_net, address());
        QVERIFY(stale.open());
        QCOMPARE(stale.link->send(stale.registration({}, nowMs() - 10 * 60 * 1000)), net::SendResult::Queued);
        err = stale.await<net::CoordinatorError>();
        QVERIFY(err.has_value());
        QCOMPARE(err->code, net::CoordinatorErrorCode::Replay);
        QVERIFY2(err->reason.find("behind the coordinator's clock") != std::string::npos, err->reason.c_str());
    }

    void wrongPinIsReported()
    {
        auto a = address();
        a.sha256 = std::string(64, '0');
        test::TestNode n;
        n.start(*m_net, a, 50, bigEnough());
        QVERIFY(test::eventually([&] { return !n.lastError().empty(); }));
        QVERIFY2(n.lastError().find("is not the pinned") != std::string::npos, n.lastError().c_str());
        QCOMPARE(n.registrationCount(), size_t(0));
    }
};

QTEST_APPLESS_MAIN(TestCoordinatorRegistration)
#include "tst_coordinator_registration.moc"
