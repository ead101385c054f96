// SPDX-License-Identifier: GPL-3.0-or-later
// Port mapping: the pure rules (error texts, candidate ports, timings) without a router,
// then PortMapper against a real miniupnpd in network namespaces (netns_lab.h): UPnP,
// NAT-PMP, no router at all, a taken port, renewal, and a router that stops answering.
// The namespace tests need root and `ip netns`; ROOKERY_SKIP_NETNS=1 skips them.
#include <QtTest>

#include <mutex>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

#include "engine/net/port_mapping.h"
#include "engine/net/port_mapping_methods.h"
#include "tests/engine/net/netns_lab.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace rookery::net;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using State = PortMappingStatus::State;

// Namespace tests fail loudly where they cannot run, unless told to skip.
#define REQUIRE_NETNS()                                                                                                \
    do {                                                                                                               \
        if (const QString why = test::netnsUnavailable(); !why.isEmpty()) {                                            \
            if (qgetenv("ROOKERY_SKIP_NETNS") == "1")                                                                  \
                QSKIP(qPrintable(why));                                                                                \
            QFAIL(qPrintable(why + " (set ROOKERY_SKIP_NETNS=1 to skip)"));                                            \
        }                                                                                                              \
    } while (false)

#define REQUIRE_LAB(lab)                                                                                               \
    do {                                                                                                               \
        if (!(lab).error().isEmpty())                                                                                  \
            QFAIL(qPrintable("lab setup: " + (lab).error()));                                                          \
    } while (false)

namespace {

// Every status the mapper published, from its thread.
struct Recorder
{
    std::mutex mutex;
    std::vector<PortMappingStatus> seen;

    PortMapper::Changed callback()
    {
        return [this](const PortMappingStatus &s) {
            std::lock_guard lock(mutex);
            seen.push_back(s);
        };
    }
    std::vector<State> states()
    {
        std::lock_guard lock(mutex);
        std::vector<State> out;
        for (const auto &s : seen)
            out.push_back(s.state);
        return out;
    }
};

PortMappingSettings settingsFor(uint16_t port, std::chrono::milliseconds discovery = 1000ms)
{
    PortMappingSettings s;
    s.internalPort = port;
    s.discoveryTimeout = discovery;
    return s;
}

bool settled(const PortMapper &m)
{
    const State s = m.status().state;
    return s == State::Mapped || s == State::Failed;
}

// miniupnpd's DNAT rule for external `ext` to the host's `internal` port.
bool redirects(const QString &rules, uint16_t ext, uint16_t internal)
{
    const QRegularExpression rule(
        QStringLiteral("dport %1 dnat ip to %2:%3\\b").arg(ext).arg(test::kLabHostLan).arg(internal));
    return rules.contains(rule);
}

QString describe(const PortMappingStatus &s)
{
    return QStringLiteral("%1 %2 %3:%4 %5")
        .arg(toString(s.state), QString::fromStdString(s.method), QString::fromStdString(s.externalAddress))
        .arg(s.externalPort)
        .arg(QString::fromStdString(s.error));
}

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

} // namespace

class TstPortMapping : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void describesUpnpErrors()
    {
        QCOMPARE(port_mapping::describeUpnpError(718), std::string("ConflictInMappingEntry (718)"));
        QCOMPARE(port_mapping::describeUpnpError(606), std::string("ActionNotAuthorized (606)"));
        QCOMPARE(port_mapping::describeUpnpError(-3), std::string("no HTTP answer from the router (-3)"));
        QCOMPARE(port_mapping::describeUpnpError(999), std::string("error (999)"));
        QVERIFY(port_mapping::isUpnpConflict(718));
        QVERIFY(port_mapping::isUpnpConflict(729));
        QVERIFY(!port_mapping::isUpnpConflict(606));
        QCOMPARE(port_mapping::describeNatPmpError(-51), std::string("the gateway does not allow it (-51)"));
    }

    void candidatePorts_data()
    {
        QTest::addColumn<int>("port");
        QTest::addColumn<int>("count");
        QTest::addColumn<QList<int>>("expected");
        QTest::newRow("neighbours") << 20001 << 4 << QList<int>{20001, 20002, 20003, 20004};
        QTest::newRow("wraps") << 65534 << 4 << QList<int>{65534, 65535, 1024, 1025};
        QTest::newRow("one") << 80 << 1 << QList<int>{80};
        QTest::newRow("no port") << 0 << 4 << QList<int>{};
    }
    void candidatePorts()
    {
        QFETCH(int, port);
        QFETCH(int, count);
        QFETCH(QList<int>, expected);
        QList<int> got;
        for (const uint16_t p : port_mapping::candidateExternalPorts(uint16_t(port), size_t(count)))
            got.push_back(p);
        QCOMPARE(got, expected);
    }

    void timings()
    {
        QCOMPARE(port_mapping::renewalDelay(3600s), std::chrono::seconds(1800));
        QCOMPARE(port_mapping::renewalDelay(1s), std::chrono::seconds(1));
        QCOMPARE(port_mapping::renewalDelay(0s), std::chrono::seconds(1800));
        QCOMPARE(port_mapping::formatDuration(2000ms), std::string("2 s"));
        QCOMPARE(port_mapping::formatDuration(1500ms), std::string("1.5 s"));
        QCOMPARE(port_mapping::formatDuration(250ms), std::string("250 ms"));
    }

    void failureSentences()
    {
        using port_mapping::Outcome;
        const auto s = settingsFor(20001, 2000ms);
        const Outcome silent{Outcome::Kind::NoRouter, {}, 0, {}, "no answer"};
        const Outcome refused{Outcome::Kind::Refused, {}, 0, {}, "the router refused the mapping: X (1)"};
        const std::string none = port_mapping::failureSentence(s, silent, silent);
        QVERIFY2(none.starts_with("no UPnP or NAT-PMP router answered within 2 s"), none.c_str());
        QVERIFY2(none.find("forward TCP port 20001 to this computer by hand") != std::string::npos, none.c_str());
        const std::string no = port_mapping::failureSentence(s, silent, refused);
        QVERIFY2(no.starts_with("the router refused the mapping: X (1)."), no.c_str());
    }

    void disabledStaysOff()
    {
        Recorder recorder;
        auto s = settingsFor(20001);
        s.enabled = false;
        {
            PortMapper mapper(s, recorder.callback());
            QCOMPARE(mapper.status().state, State::Off);
        }
        QVERIFY(recorder.states().empty());
    }

    void mapsAndUnmaps_data()
    {
        QTest::addColumn<bool>("upnp");
        QTest::addColumn<int>("port");
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("gateway");
        QTest::newRow("UPnP IGD") << true << 20001 << "UPnP IGD"
                                  << "";
        QTest::newRow("NAT-PMP") << false << 20011 << "NAT-PMP"
                                 << "";
        QTest::newRow("UPnP IGD, named router") << true << 20061 << "UPnP IGD" << test::kLabRouterLan;
        QTest::newRow("NAT-PMP, named router") << false << 20071 << "NAT-PMP" << test::kLabRouterLan;
    }
    void mapsAndUnmaps()
    {
        REQUIRE_NETNS();
        QFETCH(bool, upnp);
        QFETCH(int, port);
        QFETCH(QString, method);
        QFETCH(QString, gateway);
        test::NetnsLab lab({.daemon = true, .upnp = upnp, .natPmp = true});
        REQUIRE_LAB(lab);
        test::NetnsScope inHost(lab.host());
        QVERIFY(inHost.entered());
        Recorder recorder;
        auto settings = settingsFor(uint16_t(port));
        settings.onlyGateway = gateway.toStdString();
        auto mapper = std::make_unique<PortMapper>(settings, recorder.callback());
        const auto start = Clock::now();
        QVERIFY2(test::waitFor([&] { return settled(*mapper); }, 10s), qPrintable(describe(mapper->status())));
        const PortMappingStatus st = mapper->status();
        qInfo("%s after %.2f s", qPrintable(describe(st)), secondsSince(start));
        QVERIFY2(st.state == State::Mapped, qPrintable(describe(st) + "\n" + lab.daemonLog()));
        QCOMPARE(QString::fromStdString(st.method), method);
        QCOMPARE(st.externalAddress, std::string(test::kLabExternal));
        QCOMPARE(int(st.externalPort), port);
        QVERIFY2(redirects(lab.redirections(), st.externalPort, uint16_t(port)), qPrintable(lab.redirections()));
        QCOMPARE(recorder.states(), (std::vector<State>{State::Discovering, State::Mapped}));

        const auto stop = Clock::now();
        mapper.reset();
        qInfo("destroyed in %.2f s", secondsSince(stop));
        QVERIFY(secondsSince(stop) < 3.0);
        QVERIFY2(!redirects(lab.redirections(), st.externalPort, uint16_t(port)), qPrintable(lab.redirections()));
        QCOMPARE(recorder.states().size(), size_t(2)); // nothing after the destructor
    }

    void failsClearlyWithoutRouter()
    {
        REQUIRE_NETNS();
        test::NetnsLab lab({.daemon = false});
        REQUIRE_LAB(lab);
        test::NetnsScope inHost(lab.host());
        QVERIFY(inHost.entered());
        PortMapper mapper(settingsFor(20021), nullptr);
        const auto start = Clock::now();
        // UPnP waits its 1 s; NAT-PMP hears "port unreachable" from the gateway at once.
        QVERIFY2(test::waitFor([&] { return settled(mapper); }, 4s), qPrintable(describe(mapper.status())));
        const PortMappingStatus st = mapper.status();
        qInfo("%s after %.2f s", qPrintable(describe(st)), secondsSince(start));
        QCOMPARE(st.state, State::Failed);
        QVERIFY2(st.error.starts_with("no UPnP or NAT-PMP router answered within 1 s"), st.error.c_str());
        QVERIFY2(st.error.find("forward TCP port 20021 to this computer by hand") != std::string::npos,
                 st.error.c_str());
    }

    void asksOnlyTheNamedRouter()
    {
        REQUIRE_NETNS();
        test::NetnsLab lab({});
        REQUIRE_LAB(lab);
        test::NetnsScope inHost(lab.host());
        QVERIFY(inHost.entered());
        auto settings = settingsFor(20081);
        settings.onlyGateway = "10.231.0.9"; // nobody there; the real router must be ignored
        PortMapper mapper(settings, nullptr);
        QVERIFY2(test::waitFor([&] { return settled(mapper); }, 5s), qPrintable(describe(mapper.status())));
        const PortMappingStatus st = mapper.status();
        QVERIFY2(st.state == State::Failed, qPrintable(describe(st)));
        QVERIFY2(st.error.find("no answer from the gateway 10.231.0.9") != std::string::npos, st.error.c_str());
        QVERIFY(!redirects(lab.redirections(), 20081, 20081));
    }

    void takesTheNextPortWhenTaken()
    {
        REQUIRE_NETNS();
        test::NetnsLab lab({});
        REQUIRE_LAB(lab);
        // Something on the router itself listens on 20031: miniupnpd reports a conflict.
        int listener = -1;
        {
            test::NetnsScope inRouter(lab.router());
            QVERIFY(inRouter.entered());
            listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(20031);
            QVERIFY(bind(listener, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
            QVERIFY(listen(listener, 1) == 0);
        }
        const auto closeListener = qScopeGuard([&] { close(listener); });
        test::NetnsScope inHost(lab.host());
        QVERIFY(inHost.entered());
        PortMapper mapper(settingsFor(20031), nullptr);
        QVERIFY2(test::waitFor([&] { return settled(mapper); }, 10s), qPrintable(describe(mapper.status())));
        const PortMappingStatus st = mapper.status();
        QVERIFY2(st.state == State::Mapped, qPrintable(describe(st) + "\n" + lab.daemonLog()));
        QCOMPARE(st.method, std::string("UPnP IGD"));
        QCOMPARE(int(st.externalPort), 20032);
        QVERIFY2(redirects(lab.redirections(), 20032, 20031), qPrintable(lab.redirections()));
    }

    void renewsBeforeTheLeaseEnds()
    {
        REQUIRE_NETNS();
        test::NetnsLab lab({});
        REQUIRE_LAB(lab);
        test::NetnsScope inHost(lab.host());
        QVERIFY(inHost.entered());
        auto s = settingsFor(20041);
        s.lease = 3s; // renewed every 1.5 s; miniupnpd drops it after 3 s otherwise
        PortMapper mapper(s, nullptr);
        QVERIFY2(test::waitFor([&] { return mapper.status().state == State::Mapped; }, 10s),
                 qPrintable(describe(mapper.status())));
        QTest::qSleep(5000);
        QCOMPARE(mapper.status().state, State::Mapped);
        QVERIFY2(redirects(lab.redirections(), 20041, 20041), qPrintable(lab.redirections() + lab.daemonLog()));
        const auto adds = lab.daemonLog().count(QStringLiteral("AddPortMapping: ext port 20041"));
        QVERIFY2(adds >= 3, qPrintable(QString::number(adds)));
    }

    void destructorIsBoundedWhenTheRouterIsGone()
    {
        REQUIRE_NETNS();
        test::NetnsLab lab({});
        REQUIRE_LAB(lab);
        test::NetnsScope inHost(lab.host());
        QVERIFY(inHost.entered());
        auto mapper = std::make_unique<PortMapper>(settingsFor(20051), nullptr);
        QVERIFY2(test::waitFor([&] { return settled(*mapper); }, 10s), qPrintable(describe(mapper->status())));
        QCOMPARE(mapper->status().state, State::Mapped);
        // The router now drops everything the host sends: the removal's SOAP call hangs.
        QString out;
        QVERIFY2(lab.inRouter({"nft", "add table inet blackhole; add chain inet blackhole in"
                                      " { type filter hook input priority -300; policy drop; }"},
                              &out) == 0,
                 qPrintable(out));
        const auto stop = Clock::now();
        mapper.reset();
        qInfo("destroyed in %.2f s with the router gone", secondsSince(stop));
        QVERIFY(secondsSince(stop) < 4.0);
    }
};

QTEST_APPLESS_MAIN(TstPortMapping)
#include "tst_port_mapping.moc"
