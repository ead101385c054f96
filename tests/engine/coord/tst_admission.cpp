// SPDX-License-Identifier: GPL-3.0-or-later
// Who may join a swarm: join tokens (InviteBook, the join string that carries one, an
// invite-only coordinator across a restart) and the limits per source address
// (AddressLimits, and a coordinator enforcing them on real links).
#include <QtTest>

#include <QTemporaryDir>

#include <set>

#include "engine/common/error.h"
#include "engine/common/wall_clock.h"
#include "engine/coord/address_limits.h"
#include "engine/coord/coordinator_metrics.h"
#include "engine/coord/invite_book.h"
#include "engine/net/certificate_authority.h"
#include "engine/store/sqlite_db.h"
#include "tests/engine/coord/coord_test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

coord::CoordinatorSettings inviteOnly(const QTemporaryDir &dir)
{
    auto s = test::testSettings(dir.filePath(QStringLiteral("coord")).toStdString());
    s.admission = coord::Admission::InviteOnly;
    s.reachabilityTimeout = 0ms;
    return s;
}

} // namespace

class TestAdmission : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aJoinStringCarriesItsInvite()
    {
        const std::string pin(64, 'a');
        const auto a = net::CoordinatorAddress::parse("wss://swarm.example.org:7400/#sha256=" + pin +
                                                      "&invite=0123456789abcdef0123456789abcdef");
        QCOMPARE(a.invite, std::string("0123456789abcdef0123456789abcdef"));
        QCOMPARE(a.sha256, pin);
        QCOMPARE(net::CoordinatorAddress::parse(a.toString()), a);
        QVERIFY(net::CoordinatorAddress::parse("wss://h:1/#sha256=" + pin).invite.empty());
        for (const std::string &bad : std::vector<std::string>{"&invite=short", "&invite=has space in it 0123456789",
                                                               "&invite=", "&invite=" + std::string(129, 'x')}) {
            try {
                net::CoordinatorAddress::parse("wss://h:1/#sha256=" + pin + bad);
                QFAIL(qPrintable(QString::fromStdString("accepted " + bad)));
            } catch (const Error &e) {
                QVERIFY2(contains(e.what(), "the invite after &invite= must be"), e.what());
            }
        }
    }

    void anInviteAdmitsItsUsesUntilItExpires()
    {
        QTemporaryDir dir;
        const auto db = std::filesystem::path(dir.path().toStdString()) / "rookery.db";
        const int64_t t0 = 1'800'000'000'000;
        std::string token, shortLived;
        {
            coord::InviteBook book(db);
            const auto invite = book.create(2, 1h, "for the lab", t0);
            token = invite.token;
            QCOMPARE(token.size(), size_t(32));
            QVERIFY(net::validInvite(token));
            shortLived = book.create(5, 10s, "", t0).token;
            QCOMPARE(book.usableCount(t0), size_t(2));
            QVERIFY(!book.redeem(token, t0 + 1000)); // admitted: 1 use left
            // The token is not stored, only its hash.
            store::Database raw(db, store::Database::Access::ReadOnly);
            QCOMPARE(
                raw.scalarInt("SELECT count(*) FROM coord_invites WHERE token_hash = '" + token + "'").value_or(-1),
                int64_t(0));
        }
        coord::InviteBook reopened(db); // uses and expiry live in the database
        QVERIFY(!reopened.redeem(token, t0 + 2000));
        const auto usedUp = reopened.redeem(token, t0 + 3000);
        QVERIFY(usedUp && contains(*usedUp, "used up (it admitted 2 volunteers)"));
        const auto expired = reopened.redeem(shortLived, t0 + 10'000);
        QVERIFY(expired && contains(*expired, "expired on"));
        const auto unknown = reopened.redeem(std::string(32, 'f'), t0);
        QVERIFY(unknown && contains(*unknown, "never issued"));
        const auto none = reopened.redeem("", t0);
        QVERIFY(none && contains(*none, "invite-only"));
        const auto malformed = reopened.redeem("not a token!", t0);
        QVERIFY(malformed && contains(*malformed, "malformed"));
        QCOMPARE(reopened.usableCount(t0 + 4000), size_t(1)); // the short-lived one, still valid then
        const auto all = reopened.list();
        QCOMPARE(all.size(), size_t(2));
        QVERIFY(std::any_of(all.begin(), all.end(), [](const auto &i) {
            return i.note == "for the lab" && i.usesLeft == 0 && i.maxUses == 2;
        }));
        QVERIFY_THROWS_EXCEPTION(Error, reopened.create(0, 1h, "", t0));
        QVERIFY_THROWS_EXCEPTION(Error, reopened.create(1, 0s, "", t0));
    }

    void anAddressHasARateAndACap()
    {
        coord::AddressLimits limits({2, 60, 3}); // 2 nodes; 1 a second after a burst of 3
        const auto t0 = coord::AddressLimits::Clock::time_point{} + 1h;
        for (int i = 0; i < 3; ++i)
            QVERIFY(!limits.admitRegistration("192.0.2.1", t0));
        const auto busy = limits.admitRegistration("192.0.2.1", t0);
        QVERIFY(busy && contains(*busy, "too many registrations from 192.0.2.1"));
        QVERIFY(!limits.admitRegistration("192.0.2.2", t0)); // another address has its own bucket
        QVERIFY(limits.admitRegistration("192.0.2.1", t0 + 500ms));
        QVERIFY(!limits.admitRegistration("192.0.2.1", t0 + 1100ms)); // refilled

        QVERIFY(!limits.roomForNode("192.0.2.1"));
        limits.nodeLinked("192.0.2.1");
        limits.nodeLinked("192.0.2.1");
        const auto full = limits.roomForNode("192.0.2.1");
        QVERIFY(full && contains(*full, "already has 2 nodes"));
        QVERIFY(!limits.roomForNode("192.0.2.2"));
        limits.nodeUnlinked("192.0.2.1");
        QVERIFY(!limits.roomForNode("192.0.2.1"));

        // Idle addresses are forgotten; one with a node is kept.
        limits.prune(t0 + 1h);
        QCOMPARE(limits.trackedAddresses(), size_t(1));
        coord::AddressLimits off({0, 0, 0});
        for (int i = 0; i < 100; ++i)
            QVERIFY(!off.admitRegistration("192.0.2.1", t0));
        QCOMPARE(coord::hostOfRemote("192.0.2.1:4000"), std::string("192.0.2.1"));
        QCOMPARE(coord::hostOfRemote("[2001:db8::1]:4000"), std::string("2001:db8::1"));
    }

    // The coordinator itself: a new key needs a valid invite; a known one does not; uses
    // and expiry hold across a restart.
    void anInviteOnlyCoordinatorAdmitsByInvite()
    {
        QTemporaryDir dir;
        auto settings = inviteOnly(dir);
        auto first = std::make_unique<coord::Coordinator>(settings);
        const auto join = net::CoordinatorAddress::parse(first->createInvite(2, 1h, "test"));
        QVERIFY(!join.invite.empty());
        auto bare = join;
        bare.invite.clear();
        net::NetContext ctx(1);

        test::TestNode stranger;
        stranger.start(ctx, bare, 50, 1u << 30);
        QVERIFY(test::eventually([&] { return !stranger.lastError().empty(); }));
        QVERIFY2(contains(stranger.lastError(), "invite-only"), stranger.lastError().c_str());
        QCOMPARE(stranger.registrationCount(), size_t(0));
        QCOMPARE(first->counters().refusedNotInvited, uint64_t(1));

        test::TestNode member;
        member.start(ctx, join, 50, 1u << 30);
        QVERIFY(test::eventually([&] { return member.registrationCount() >= 1; }));

        settings.port = first->port();
        first.reset();
        coord::Coordinator second(settings);
        // The member comes back with the same key: known, so its (used) invite is not
        // taken again.
        QVERIFY(test::eventually([&] { return member.registrationCount() >= 2; }));
        test::TestNode another;
        another.start(ctx, join, 50, 1u << 30);
        QVERIFY(test::eventually([&] { return another.registrationCount() >= 1; }));
        test::TestNode late;
        late.start(ctx, join, 50, 1u << 30);
        QVERIFY(test::eventually([&] { return !late.lastError().empty(); }));
        QVERIFY2(contains(late.lastError(), "used up"), late.lastError().c_str());

        auto expiring = net::CoordinatorAddress::parse(second.createInvite(5, 1s));
        std::this_thread::sleep_for(1100ms);
        test::TestNode tooLate;
        tooLate.start(ctx, expiring, 50, 1u << 30);
        QVERIFY(test::eventually([&] { return !tooLate.lastError().empty(); }));
        QVERIFY2(contains(tooLate.lastError(), "expired"), tooLate.lastError().c_str());
        QCOMPARE(second.counters().refusedNotInvited, uint64_t(2));
        QVERIFY_THROWS_EXCEPTION(
            Error, coord::Coordinator(test::testSettings(dir.filePath("open").toStdString())).createInvite(1, 1h));
    }

    // Over an address's limits a node is told to wait, not refused: it retries by itself
    // and gets in once there is room.
    void anAddressOverItsLimitsWaits()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.reachabilityTimeout = 0ms;
        s.addressLimits = {2, 600, 2}; // 2 nodes from one address; 10 registrations a second after 2
        s.maxLinksPerAddress = 4;
        coord::Coordinator c(s);
        net::NetContext ctx(1);
        std::vector<std::unique_ptr<test::TestNode>> nodes;
        for (int i = 0; i < 3; ++i) {
            nodes.push_back(std::make_unique<test::TestNode>());
            nodes.back()->start(ctx, c.coordinatorAddress(), 50, 1u << 30);
        }
        QVERIFY(test::eventually([&] { return c.counters().nodesOnline == 2 && c.counters().refusedLimited >= 2; }));
        const auto waiting =
            std::find_if(nodes.begin(), nodes.end(), [](const auto &n) { return n->registrationCount() == 0; });
        QVERIFY(waiting != nodes.end());
        QVERIFY((*waiting)->lastError().empty()); // not a refusal: it keeps trying
        const auto leaver =
            std::find_if(nodes.begin(), nodes.end(), [](const auto &n) { return n->registrationCount() > 0; });
        (*leaver)->client->leave("making room");
        (*leaver)->client->stop();
        QVERIFY(test::eventually([&] { return (*waiting)->registrationCount() >= 1; }));
        QCOMPARE(c.counters().nodesOnline, size_t(2));

        // More connections than the cap from one address are closed at the door.
        std::vector<std::unique_ptr<test::TestNode>> more;
        for (int i = 0; i < 4; ++i) {
            more.push_back(std::make_unique<test::TestNode>());
            more.back()->start(ctx, c.coordinatorAddress(), 50, 1u << 30);
        }
        QVERIFY(test::eventually([&] { return c.counters().refusedConnections > 0; }));
    }

    // Heartbeats carry each node's complaints (values of a peer it refused as poisoned).
    // Two reporters, or one reporting 3 refusals, quarantine the accused: re-planned away,
    // told why, its key refused from then on (also after a restart), no new keys from its
    // address, and every other node (also one that registers later) hears the ban list.
    // Refusals are reported at once, not at the next heartbeat: with beats 10 s apart, a
    // node's 3 refusals of its pipeline neighbour quarantine it well before the next one.
    void refusalsAreReportedBeforeTheNextHeartbeat()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.reachabilityTimeout = 0ms;
        s.clusterSize = 2;
        s.expectNodes = 2; // one plan for both: a pipeline of two
        s.firstPlanDelay = 30s;
        s.heartbeatInterval = 10s;
        s.heartbeatTimeout = 60s;
        auto c = std::make_unique<coord::Coordinator>(s);
        net::NetContext ctx(1);
        std::vector<std::unique_ptr<test::TestNode>> n;
        for (int i = 0; i < 2; ++i) {
            n.push_back(std::make_unique<test::TestNode>());
            n.back()->start(ctx, c->coordinatorAddress(), 50, 1u << 30);
        }
        QVERIFY(test::eventually([&] {
            const auto a = c->assignments();
            return a.size() == 2 && a.begin()->second.state == coord::AssignmentState::Training &&
                   std::next(a.begin())->second.state == coord::AssignmentState::Training;
        }));
        const auto sent = [&] { return n[0]->client->stats().heartbeatsSent; };
        const auto before = sent();
        coord::NodeReport r;
        r.complaints[n[1]->identity.nodeId()] = 3;
        const auto reported = std::chrono::steady_clock::now();
        n[0]->client->report(r);
        QVERIFY(test::eventually([&] { return c->counters().quarantined == 1; }, 5s));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - reported).count();
        qInfo("quarantined %.3f s after the report, beats 10 s apart", seconds);
        QVERIFY2(seconds < 5, qPrintable(QString::number(seconds)));
        QVERIFY(sent() >= before + 1); // the early beat (a regular one may have come too)
        // The same complaints again send nothing early: the next beat keeps its time.
        const auto after = sent();
        n[0]->client->report(r);
        std::this_thread::sleep_for(500ms);
        QVERIFY(sent() <= after + 1); // at most the regular beat, were it due just now
    }

    void aNodeItsPeersRefuseIsQuarantined()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.reachabilityTimeout = 0ms;
        s.clusterSize = 2; // pipeline neighbours, ring peers, and strangers
        s.expectNodes = 4; // one plan for all four: two clusters of two, the same cut
        s.firstPlanDelay = 30s;
        auto c = std::make_unique<coord::Coordinator>(s);
        net::NetContext ctx(1);
        std::vector<std::unique_ptr<test::TestNode>> n;
        for (int i = 0; i < 4; ++i) {
            n.push_back(std::make_unique<test::TestNode>());
            n.back()->start(ctx, c->coordinatorAddress(), 50, 1u << 30);
        }
        QVERIFY(test::eventually([&] { return c->counters().nodesOnline == 4; }));
        const auto complain = [&](int who, int about, int64_t refused) {
            coord::NodeReport r;
            r.complaints[n[size_t(about)]->identity.nodeId()] = refused;
            n[size_t(who)]->client->report(r);
        };
        const auto indexOf = [&](const std::string &id) {
            for (size_t i = 0; i < n.size(); ++i)
                if (n[i]->identity.nodeId() == id)
                    return int(i);
            return -1;
        };
        // Who takes values from whom in the plan: pipeline neighbours and ring members.
        const auto sources = [&](int who) {
            std::set<int> out;
            const auto a = c->assignments().at(n[size_t(who)]->identity.nodeId());
            for (const auto *p : {&a.previous, &a.next})
                if (!p->empty())
                    out.insert(indexOf(p->nodeId));
            for (const auto &ring : a.rings)
                for (const auto *m : {&ring.previous, &ring.next})
                    if (!m->empty())
                        out.insert(indexOf(m->nodeId));
            out.erase(who);
            return out;
        };
        QVERIFY(test::eventually([&] {
            for (const auto &[id, a] : c->assignments())
                if (a.state != coord::AssignmentState::Training)
                    return false;
            return true;
        }));
        // Node 1's pipeline neighbour, a ring peer of it, and a stranger (2 clusters of 2
        // equal nodes: the same cut, one ring peer each).
        int neighbour = -1, ringPeer = -1, stranger = -1;
        {
            const auto a = c->assignments().at(n[1]->identity.nodeId());
            neighbour = indexOf(a.previous.empty() ? a.next.nodeId : a.previous.nodeId);
            const auto from1 = sources(1);
            for (int i : {0, 2, 3})
                if (i != neighbour)
                    (from1.count(i) ? ringPeer : stranger) = i;
        }
        QVERIFY(neighbour >= 0 && ringPeer >= 0 && stranger >= 0);
        QVERIFY(sources(neighbour).count(1) && sources(ringPeer).count(1) && !sources(stranger).count(1));
        // A node's complaints about a node it takes no values from count for nothing.
        complain(stranger, 1, 5);
        std::this_thread::sleep_for(500ms);
        QCOMPARE(c->counters().quarantined, uint64_t(0));
        complain(neighbour, 1, 1);
        std::this_thread::sleep_for(500ms); // several heartbeats: one reporter, one refusal
        QCOMPARE(c->counters().quarantined, uint64_t(0));
        complain(ringPeer, 1, 1); // a second reporter
        QVERIFY(test::eventually([&] { return c->counters().quarantined == 1; }));
        QVERIFY(test::eventually([&] { return contains(n[1]->lastError(), "quarantined for the run"); }));
        QVERIFY2(contains(n[1]->lastError(), "2 peers refused its values"), n[1]->lastError().c_str());
        QCOMPARE(c->assignments().at(n[1]->identity.nodeId()).state, coord::AssignmentState::Stopped);
        const std::vector<std::string> firstBan{n[1]->identity.nodeId()};
        for (int i : {0, 2, 3})
            QVERIFY(test::eventually([&] { return n[size_t(i)]->banned() == firstBan; }));
        QVERIFY(n[1]->banned().empty()); // the banned node itself is told by its refusal

        // Re-planned without node 1: one reporter, 3 refusals, about a node it takes
        // values from.
        int accused = -1, reporter = -1;
        QVERIFY(test::eventually([&] {
            for (int i : {0, 2, 3})
                for (int j : sources(i))
                    if (j != 1 && j >= 0) {
                        reporter = i;
                        accused = j;
                        return true;
                    }
            return false;
        }));
        complain(reporter, accused, 2);
        std::this_thread::sleep_for(500ms);
        QCOMPARE(c->counters().quarantined, uint64_t(1));
        complain(reporter, accused, 3);
        QVERIFY(test::eventually([&] { return c->counters().quarantined == 2; }));
        QVERIFY(test::eventually([&] { return contains(n[size_t(accused)]->lastError(), "3 times"); }));
        const std::vector<std::string> bothBanned{n[1]->identity.nodeId(), n[size_t(accused)]->identity.nodeId()};
        for (int i : {0, 2, 3})
            if (i != accused)
                QVERIFY(test::eventually([&] { return n[size_t(i)]->banned() == bothBanned; }));
        QVERIFY(contains(c->statusJson(), "\"quarantined\""));

        // A new key from the quarantined nodes' address is refused.
        test::TestNode newcomer;
        newcomer.start(ctx, c->coordinatorAddress(), 50, 1u << 30);
        QVERIFY(test::eventually([&] { return contains(newcomer.lastError(), "no new nodes from that address"); }));

        // After a restart the key is still banned.
        s.port = c->port();
        c.reset();
        coord::Coordinator again(s);
        test::TestNode returning;
        returning.identity = n[1]->identity;
        returning.start(ctx, again.coordinatorAddress(), 50, 1u << 30);
        QVERIFY(test::eventually([&] { return contains(returning.lastError(), "quarantined for the run"); }));
        const size_t honest = accused == 2 ? 3 : 2;
        QVERIFY(test::eventually([&] { return n[honest]->registrationCount() >= 2; })); // the honest come back
        // ...and hear the ban list (restored from the database) again as they register.
        QVERIFY(test::eventually([&] {
            std::lock_guard lock(n[honest]->mutex);
            return n[honest]->banLists.size() >= 3 && n[honest]->banLists.back().nodeIds.size() == 2;
        }));
    }

    // A node renews its certificate (registers again, on a new link) when half of its
    // life is left: with 4-second certificates, every 2 s or so, each one new and still
    // valid, while the node stays online and keeps its assignment.
    void aNodeRenewsItsCertificateBeforeItExpires()
    {
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.certificateLifetime = 4s;
        coord::Coordinator c(s);
        net::NetContext ctx(1);
        test::TestNode n;
        n.start(ctx, c.coordinatorAddress(), 50, 1u << 30);
        QVERIFY(test::eventually([&] { return n.registrationCount() >= 1; }));
        const auto start = std::chrono::steady_clock::now();
        bool alwaysOnline = true;
        while (n.registrationCount() < 4 && std::chrono::steady_clock::now() - start < 20s) {
            alwaysOnline = alwaysOnline && c.counters().nodesOnline == 1;
            QTest::qWait(50);
        }
        QVERIFY(n.registrationCount() >= 4);
        QVERIFY(alwaysOnline);
        const auto placed = c.assignments().at(n.identity.nodeId()).version;
        std::lock_guard lock(n.mutex);
        std::set<std::string> certificates;
        for (const auto &r : n.registrations) {
            certificates.insert(r.certificatePem);
            if (&r != &n.registrations.front())
                QCOMPARE(r.assignment.version, placed); // renewals are not re-planned
        }
        QCOMPARE(certificates.size(), n.registrations.size());
        QVERIFY(net::certificateExpiry(n.registrations.back().certificatePem) > std::chrono::system_clock::now());
    }

    void theLimitsShowInTheMetrics()
    {
        coord::StatusInputs in;
        in.counters.refusedNotInvited = 3;
        in.counters.refusedLimited = 5;
        in.listener.refusedPerAddress = 7;
        const std::string text = coord::coordinatorMetrics(in);
        QVERIFY2(contains(text, "rookery_coordinator_refused_total{limit=\"invite\"} 3"), text.c_str());
        QVERIFY(contains(text, "rookery_coordinator_refused_total{limit=\"address_registrations\"} 5"));
        QVERIFY(contains(text, "rookery_coordinator_refused_total{limit=\"address_connections\"} 7"));
        QVERIFY(contains(text, "rookery_coordinator_refused_total{limit=\"connections\"} 0"));
    }
};

QTEST_GUILESS_MAIN(TestAdmission)
#include "tst_admission.moc"
