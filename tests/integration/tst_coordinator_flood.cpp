// SPDX-License-Identifier: GPL-3.0-or-later
// Acceptance (trust): a coordinator flooded from one address. A real rookery-coordinator,
// invite-only with its default limits, takes in turn 5,000 registrations, 2,000 idle
// links, 2,000 links sending frames over its 64 KiB limit, links repeating Registers
// with 16 MiB profiles and links sending Leave before Register, all from 127.0.0.2. Meanwhile honest nodes on 127.0.0.1 keep
// their links and heartbeats (no "lost"), one more joins, the coordinator's memory stays
// under a stated bound, and its metrics count what each limit refused.
#include <QTemporaryDir>
#include <QtTest>

#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <regex>

#include "engine/common/wall_clock.h"
#include "engine/net/dialer.h"
#include "engine/net/identity.h"
#include "tests/engine/coord/coord_test_support.h"
#include "tests/support/coordinator_process.h"
#include "tests/support/https_get.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

constexpr const char *kAttacker = "127.0.0.2"; // all of 127/8 is loopback

// The bound this test holds the coordinator to: its peak resident memory may grow by at
// most this much over what it used with the honest nodes alone.
constexpr int64_t kGrowthBoundKiB = 32 * 1024;

int64_t procStatusKiB(qint64 pid, const std::string &field)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0)
            return std::stoll(line.substr(field.size() + 1));
    return -1;
}

std::string nonce()
{
    std::string n(16, '\0');
    RAND_bytes(reinterpret_cast<unsigned char *>(n.data()), 16);
    return n;
}

net::Register registration(const net::Identity &id, std::string profile)
{
    return {"flood", "127.0.0.2:9", std::move(profile), nonce(), nowMs(),
            "flood", 1e6,           id.publicKeyPem(),  0,       /*invite*/ ""};
}

// Links from the attacker's address, at most `window` at a time, each doing `onOpen` once
// it is open; waits until every one has closed (the coordinator closes them).
struct Wave
{
    std::atomic<int> opened{0}, closed{0}, notInvited{0}, limited{0};
    std::mutex mutex;
    std::condition_variable changed;
    int inFlight = 0;
    int openNow = 0, mostOpen = 0; ///< links open at once (under `mutex`)

    bool run(net::NetContext &ctx, const net::CoordinatorAddress &address, int total, int window,
             const std::function<void(const std::shared_ptr<net::Link> &, const net::Identity &)> &onOpen,
             std::chrono::seconds limit)
    {
        std::vector<std::shared_ptr<net::Link>> links;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (int i = 0; i < total; ++i) {
            {
                std::unique_lock lock(mutex);
                if (!changed.wait_until(lock, deadline, [&] { return inFlight < window; }))
                    return false;
                ++inFlight;
            }
            auto id = std::make_shared<net::Identity>(net::Identity::generate());
            net::LinkConfig lc;
            lc.nodeId = id->nodeId();
            lc.handshakeTimeout = 20s;
            auto dc = net::coordinatorDialConfig(address, {id->selfSignedCertificate(), id->privateKeyPem(), ""}, lc);
            dc.reconnect = false;
            dc.localAddress = kAttacker;
            net::LinkEvents e;
            auto wasOpen = std::make_shared<std::atomic<bool>>(false);
            e.opened = [this, id, onOpen, wasOpen](const std::shared_ptr<net::Link> &l) {
                ++opened;
                {
                    std::lock_guard lock(mutex);
                    mostOpen = std::max(mostOpen, ++openNow);
                }
                *wasOpen = true;
                onOpen(l, *id);
            };
            e.message = [this](const std::shared_ptr<net::Link> &, net::Message &&m) {
                if (const auto *err = std::get_if<net::CoordinatorError>(&m))
                    ++(err->code == net::CoordinatorErrorCode::NotInvited ? notInvited : limited);
            };
            e.closed = [this, wasOpen](const std::shared_ptr<net::Link> &, const net::CloseInfo &) {
                ++closed;
                std::lock_guard lock(mutex);
                if (wasOpen->exchange(false))
                    --openNow;
                --inFlight;
                changed.notify_all();
            };
            links.push_back(net::dial(ctx, std::move(dc), std::move(e)));
        }
        std::unique_lock lock(mutex);
        const bool done = changed.wait_until(lock, deadline, [&] { return inFlight == 0; });
        lock.unlock();
        for (auto &l : links) // those left when it took too long
            l->close("the test is done");
        return done;
    }
};

} // namespace

class TestCoordinatorFlood : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void honestNodesOutlastAFloodFromOneAddress()
    {
        QTemporaryDir dir;
        const QString dataDir = dir.filePath(QStringLiteral("coord"));
        const uint16_t statusPort = test::freeLoopbackPort();
        // No dataset to serve: cutting one into shards at start (about 100 MiB for a moment)
        // would sit in the peak this test bounds, which is the flood's.
        test::CoordinatorProcess coordinator(
            dataDir, 0,
            {QStringLiteral("--status-port"), QString::number(statusPort), QStringLiteral("--heartbeat-ms"),
             QStringLiteral("200"), QStringLiteral("--heartbeat-timeout-ms"), QStringLiteral("2000"),
             QStringLiteral("--reachability-timeout"), QStringLiteral("0"), QStringLiteral("--io-threads"),
             QStringLiteral("1"), QStringLiteral("--dataset-dir"), dataDir + QStringLiteral("-no-dataset")});
        QVERIFY2(!coordinator.address().isEmpty(), qPrintable(coordinator.output()));
        QString out, err;
        QCOMPARE(test::runProgram(test::programPath(QStringLiteral("rookery-coordinator")),
                                  {QStringLiteral("invite"), QStringLiteral("--data-dir"), dataDir,
                                   QStringLiteral("--uses"), QStringLiteral("3")},
                                  &out, &err, 30s),
                 0);
        const auto join = net::CoordinatorAddress::parse(out.trimmed().toStdString());

        net::NetContext honestNet(1);
        std::vector<std::unique_ptr<test::TestNode>> honest;
        for (int i = 0; i < 2; ++i) {
            honest.push_back(std::make_unique<test::TestNode>());
            honest.back()->start(honestNet, join, 50, 1u << 30);
        }
        QVERIFY(test::eventually([&] {
            return std::all_of(honest.begin(), honest.end(), [](auto &n) { return n->registrationCount() == 1; });
        }));
        std::this_thread::sleep_for(1s);
        const int64_t baselineKiB = procStatusKiB(coordinator.pid(), "VmRSS");
        QVERIFY(baselineKiB > 0);
        const auto acked = [&](size_t i) { return honest[i]->client->stats().heartbeatsAcked; };

        net::NetContext attackNet(1);
        auto bare = join;
        bare.invite.clear();
        const auto phase = [&](const char *name, const std::function<void()> &body) {
            const uint64_t before0 = acked(0), before1 = acked(1);
            const auto started = std::chrono::steady_clock::now();
            body();
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            qInfo("%s: %.1f s, coordinator RSS %lld KiB (peak %lld KiB, baseline %lld KiB)", name, seconds,
                  static_cast<long long>(procStatusKiB(coordinator.pid(), "VmRSS")),
                  static_cast<long long>(procStatusKiB(coordinator.pid(), "VmHWM")),
                  static_cast<long long>(baselineKiB));
            // The honest nodes were answered all along: at least one heartbeat a second.
            [&] {
                QVERIFY2(acked(0) >= before0 + uint64_t(seconds * 0.5) && acked(1) >= before1 + uint64_t(seconds * 0.5),
                         name);
            }();
            return seconds;
        };

        // 1. 5,000 registrations, each on a link of its own, 48 at a time (under the 64
        // connections an address may hold): refused for want of an invite while the
        // address's burst lasts, then told to wait.
        Wave registrations;
        const double registrationSeconds = phase("5,000 registrations", [&] {
            QVERIFY(registrations.run(
                attackNet, bare, 5000, 48,
                [](const auto &l, const net::Identity &id) {
                    (void)l->send(registration(id, test::profileJson(50, 1u << 30)));
                },
                300s));
        });
        qInfo("registrations: %d opened, %d refused for no invite, %d told to wait", registrations.opened.load(),
              registrations.notInvited.load(), registrations.limited.load());
        // The burst of 40, and 30 a minute after it.
        QVERIFY(registrations.notInvited >= 40 && registrations.notInvited <= 42 + registrationSeconds / 2);
        QCOMPARE(registrations.notInvited + registrations.limited, registrations.opened.load());

        // 2. 2,000 idle links at once: at most 64 are in at a time; the others are closed
        // at the door, and those 64 when they have not registered within 10 s (on a
        // loaded machine the wave outlasts those 10 s, and more get in as places free).
        Wave idle;
        phase("2,000 idle links", [&] {
            QVERIFY(idle.run(
                attackNet, bare, 2000, 2000, [](const auto &, const net::Identity &) {}, 60s));
        });
        qInfo("idle: %d of 2,000 opened, at most %d at once", idle.opened.load(), idle.mostOpen);
        QVERIFY(idle.opened > 0 && idle.mostOpen <= 64);

        // 3. 2,000 links whose first message is over the 64 KiB the coordinator takes from
        // a node: each is closed after at most 64 KiB.
        const std::string overLimit = test::profileJson(50, 1u << 30) + std::string(100 << 10, ' ');
        Wave oversized;
        phase("2,000 oversized frames", [&] {
            QVERIFY(oversized.run(
                attackNet, bare, 2000, 48,
                [&](const auto &l, const net::Identity &id) { (void)l->send(registration(id, overLimit)); }, 300s));
        });
        QCOMPARE(oversized.opened.load(), 2000);

        // 4. Registers with 16 MiB profiles, three on each link.
        const std::string huge(16u << 20, 'x');
        Wave repeated;
        phase("repeated 16 MiB Registers", [&] {
            QVERIFY(repeated.run(
                attackNet, bare, 8, 4,
                [&](const auto &l, const net::Identity &id) {
                    for (int i = 0; i < 3; ++i)
                        (void)l->send(registration(id, huge));
                },
                120s));
        });

        // 5. A Leave instead of a Register: closed at once, not kept until the 10 s
        // registration timer (which a first message used to stop).
        Wave leavers;
        const double leaveSeconds = phase("Leave before Register", [&] {
            QVERIFY(leavers.run(
                attackNet, bare, 20, 10,
                [](const auto &l, const net::Identity &) { (void)l->send(net::Leave{"never registered"}); }, 60s));
        });
        QVERIFY(leaveSeconds < 8);
        QCOMPARE(leavers.opened.load(), 20);

        // Someone honest joins after all that.
        honest.push_back(std::make_unique<test::TestNode>());
        honest.back()->start(honestNet, join, 50, 1u << 30);
        QVERIFY(test::eventually([&] { return honest.back()->registrationCount() == 1; }));

        const int64_t peakKiB = procStatusKiB(coordinator.pid(), "VmHWM");
        qInfo("coordinator memory: baseline %lld KiB, peak %lld KiB, growth %lld KiB (bound %lld KiB)",
              static_cast<long long>(baselineKiB), static_cast<long long>(peakKiB),
              static_cast<long long>(peakKiB - baselineKiB), static_cast<long long>(kGrowthBoundKiB));
        QVERIFY(peakKiB - baselineKiB < kGrowthBoundKiB);

        // No honest node was lost or dropped.
        const QString log = coordinator.output(100);
        QVERIFY2(!log.contains(QStringLiteral("lost node")), qPrintable(log.right(3000)));
        for (const auto &n : honest)
            QCOMPARE(n->disconnectCount(), 0);

        // The limits show in the metrics.
        const auto metrics = test::httpsGet(statusPort, "/metrics").body;
        for (const char *limit : {"invite", "address_registrations", "address_connections"}) {
            const std::regex line(std::string("rookery_coordinator_refused_total\\{limit=\"") + limit +
                                  "\"\\} ([0-9]+)");
            std::smatch m;
            QVERIFY2(std::regex_search(metrics, m, line), limit);
            QVERIFY2(std::stoll(m[1]) > 0, limit);
        }
        for (auto &n : honest)
            n->client->stop();
        QCOMPARE(coordinator.terminate(), 0);
    }
};

QTEST_GUILESS_MAIN(TestCoordinatorFlood)
#include "tst_coordinator_flood.moc"
