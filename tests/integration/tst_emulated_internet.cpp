// SPDX-License-Identifier: GPL-3.0-or-later
// The real programs on an emulated internet (tests/support/emulated_internet.h), issue
// 15's acceptance: a swarm of 2 clusters of 2 stages, all four nodes at home behind two
// NATs, trains the MLP to 85%. Nodes A1 and A2 sit behind a router with miniupnpd: each
// maps its peer port and is "direct" at router A's WAN address (two mapped ports). Nodes
// B1 and B2 sit behind a router without: "unreachable" at router B's address, and
// linked through the coordinator's relay whenever the plan makes them neighbours. Both
// facts are read from the coordinator's status API; the accuracies from the first
// stages' output. The mappings are gone from router A once the nodes have left.
// Router A does no hairpin NAT (as miniupnpd's rules stand), so when A1 and A2 are
// neighbours the direct dial between them fails and they fall back to the relay.
// Needs root; ROOKERY_SKIP_NETNS=1 skips it where it cannot run.
#include <QtTest>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include "engine/common/error.h"
#include "engine/common/secret_token.h"
#include "engine/host/swarm_status.h"
#include "engine/net/coordinator_address.h"
#include "tests/engine/net/netns_lab.h"
#include "tests/support/emulated_internet.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;
using Site = test::EmulatedInternet::Site;
namespace in = test::internet;

namespace {

constexpr uint16_t kStatusPort = 7401;
constexpr uint16_t kRelayPort = 7402;
constexpr int kReachabilityTimeoutS = 20;
constexpr qint64 kRunTimeoutMs = 480'000; ///< from the nodes' start to the run's end

QString absoluteProgram(const QString &name) { return QFileInfo(test::programPath(name)).absoluteFilePath(); }

// "host:port" -> host and port; port 0 when there is none.
std::pair<QString, int> splitAddress(const QString &address)
{
    const auto colon = address.lastIndexOf(QLatin1Char(':'));
    if (colon < 0)
        return {address, 0};
    return {address.left(colon), address.mid(colon + 1).toInt()};
}

// The coordinator's status API, read from inside the public namespace (the test's main
// thread enters it for each request), at most every 250 ms.
class StatusWatch
{
public:
    /// `token`: the coordinator's operator token, for the full view (addresses).
    StatusWatch(const test::EmulatedInternet &net, std::string pin, std::string token)
        : m_net(net)
        , m_pin(std::move(pin))
        , m_token(std::move(token))
    { }

    /// The public view, as anyone on the internet reads it; empty on failure (error()).
    QByteArray readPublic()
    {
        test::NetnsScope inside(m_net.ns(Site::Public));
        try {
            return QByteArray::fromStdString(host::fetchSwarmStatus(in::kCoordinator, kStatusPort, m_pin, 2000ms));
        } catch (const Error &e) {
            m_error = QString::fromStdString(e.what());
            return {};
        }
    }

    /// Reads the status until `holds` is true of it, or `timeout` passes.
    bool waitUntil(const std::function<bool(const QJsonObject &)> &holds, std::chrono::milliseconds timeout)
    {
        return test::waitFor(
            [&] {
                if (m_sinceRead.isValid() && m_sinceRead.elapsed() < 250)
                    return false;
                read();
                return !m_last.isEmpty() && holds(m_last);
            },
            timeout);
    }

    QJsonObject node(const QString &name) const
    {
        for (const QJsonValue &v : m_last.value(QStringLiteral("nodes")).toArray())
            if (v.toObject().value(QStringLiteral("name")).toString() == name)
                return v.toObject();
        return {};
    }
    const QJsonObject &last() const { return m_last; }
    const QString &error() const { return m_error; }
    /// Called with every document read, on the test's thread.
    std::function<void(const QJsonObject &)> observe;

private:
    void read()
    {
        m_sinceRead.start();
        test::NetnsScope inside(m_net.ns(Site::Public));
        if (!inside.entered()) {
            m_error = QStringLiteral("cannot enter the public namespace");
            return;
        }
        try {
            const std::string body = host::fetchSwarmStatus(in::kCoordinator, kStatusPort, m_pin, 2000ms, m_token);
            m_last = QJsonDocument::fromJson(QByteArray::fromStdString(body)).object();
            m_error.clear();
            if (observe)
                observe(m_last);
        } catch (const Error &e) {
            m_error = QString::fromStdString(e.what());
        }
    }

    const test::EmulatedInternet &m_net;
    std::string m_pin;
    std::string m_token;
    QJsonObject m_last;
    QString m_error;
    QElapsedTimer m_sinceRead;
};

QString field(const QJsonObject &node, const char *name) { return node.value(QLatin1String(name)).toString(); }
qint64 number(const QJsonObject &o, const char *key) { return o.value(QLatin1String(key)).toInteger(-1); }

QString brief(const QJsonObject &node)
{
    return QStringLiteral("%1 at %2: %3 (%4), presence %5, state %6, cluster %7 stage %8, step %9")
        .arg(field(node, "name"), field(node, "address"), field(node, "reachability"), field(node, "reachability_note"),
             field(node, "presence"), field(node, "state"))
        .arg(number(node, "cluster"))
        .arg(number(node, "stage"))
        .arg(number(node, "step"));
}

bool checked(const QJsonObject &node)
{
    const QString r = field(node, "reachability");
    return r == QLatin1String("direct") || r == QLatin1String("unreachable");
}

// The home machines: where each runs, and its name in the swarm.
struct Home
{
    Site site;
    const char *name;
    const char *lanAddress;
};
constexpr Home kHomes[] = {{Site::HomeA1, "home-a1", in::kHomeA1},
                           {Site::HomeA2, "home-a2", in::kHomeA2},
                           {Site::HomeB1, "home-b1", in::kHomeB1},
                           {Site::HomeB2, "home-b2", in::kHomeB2}};

// A node's final accuracy, from its `done:` line (first stages only), or -1.
double finalAccuracy(const QString &output)
{
    static const QRegularExpression done(
        QStringLiteral("done: cluster (\\d+) at step (\\d+): test accuracy ([0-9.]+)%"));
    const auto m = done.match(output);
    return m.hasMatch() ? m.captured(3).toDouble() / 100.0 : -1;
}

} // namespace

class TestEmulatedInternet : public QObject
{
    Q_OBJECT

private:
    std::unique_ptr<test::EmulatedInternet> m_net;
    std::unique_ptr<StatusWatch> m_status;
    test::NetnsProcess *m_coordinator = nullptr;
    std::map<QString, test::NetnsProcess *> m_nodes; ///< name -> its process
    std::map<QString, QString> m_idToName;           ///< node id -> name, from the status
    QElapsedTimer m_sinceNodesStarted;
    qint64 m_trainingSeenMs = -1;             ///< when a pipeline was first seen past its first step
    std::map<QString, qint64> m_registeredMs; ///< node name -> when the status first listed it
    std::map<QString, qint64> m_verdictMs;    ///< node name -> when the status first had its verdict
    bool m_hairpin = false;                   ///< A1 reaches A2 at router A's WAN address and A2's mapped port
    std::set<std::pair<QString, QString>> m_neighbours; ///< pairs of names (sorted) with a link in the plan
    std::set<std::pair<QString, QString>> m_pipelines;  ///< those linked as stages of one pipeline
    bool m_broken = false;                              ///< a step failed: the later ones would only wait

    // Everything the programs said, for a failure's message.
    QString logs() const
    {
        QString text = "\n--- miniupnpd ---\n" + m_net->miniupnpdLog().right(3000);
        if (m_coordinator)
            text += "\n--- coordinator ---\n" + m_coordinator->output().right(5000);
        for (const auto &[name, p] : m_nodes)
            text += "\n--- " + name + " ---\n" + p->output().right(4000);
        return text;
    }

    test::NetnsProcess &startNode(const Home &home, const QString &join)
    {
        const QString name = QLatin1String(home.name);
        // --threads 1: five programs share this machine's cores. No --stay: each node
        // leaves once the run is complete, and takes its mapping with it.
        return m_net->start(home.site, name, absoluteProgram(QStringLiteral("rookery-node")),
                            {"--join", join, "--data-dir", m_net->filePath(name), "--name", name, "--dataset-dir",
                             QString::fromStdString(test::fashionMnistDir().string()), "--threads", "1",
                             "--no-control"});
    }

    QString nameOf(const QJsonValue &id) const
    {
        const auto it = m_idToName.find(id.toString());
        return it == m_idToName.end() ? id.toString().left(12) : it->second;
    }
    bool neighbours(const char *a, const char *b) const
    {
        const QString x = QLatin1String(a), y = QLatin1String(b);
        return m_neighbours.count(std::minmax(x, y)) > 0;
    }
    // Every cluster has its stages and every node trains at one.
    static bool planned(const QJsonObject &status)
    {
        const QJsonArray clusters = status.value(QStringLiteral("clusters")).toArray();
        if (clusters.size() != 2)
            return false;
        for (const QJsonValue &c : clusters)
            if (c.toObject().value(QStringLiteral("stages")).toArray().size() != 2)
                return false;
        for (const QJsonValue &n : status.value(QStringLiteral("nodes")).toArray())
            if (field(n.toObject(), "state") != QLatin1String("training"))
                return false;
        return status.value(QStringLiteral("nodes")).toArray().size() == 4;
    }
    void observe(const QJsonObject &status)
    {
        const qint64 now = m_sinceNodesStarted.elapsed();
        for (const QJsonValue &v : status.value(QStringLiteral("nodes")).toArray()) {
            const QJsonObject n = v.toObject();
            m_idToName[field(n, "id")] = field(n, "name");
            m_registeredMs.emplace(field(n, "name"), now);
            if (checked(n))
                m_verdictMs.emplace(field(n, "name"), now);
        }
        // A pipeline trains when both of its stages are past their first step.
        for (const QJsonValue &c : status.value(QStringLiteral("clusters")).toArray()) {
            const QJsonArray stages = c.toObject().value(QStringLiteral("stages")).toArray();
            bool moving = stages.size() == 2;
            for (const QJsonValue &st : stages)
                moving = moving && number(m_status->node(nameOf(st.toObject().value("node_id"))), "step") > 0;
            if (moving && m_trainingSeenMs < 0)
                m_trainingSeenMs = now;
        }
    }
    QJsonObject counts() const { return m_status->last().value(QStringLiteral("counts")).toObject(); }

private Q_SLOTS:
    void initTestCase()
    {
        ROOKERY_REQUIRE_EMULATED_INTERNET();
        QElapsedTimer timer;
        timer.start();
        m_net = std::make_unique<test::EmulatedInternet>();
        QVERIFY2(m_net->error().isEmpty(), qPrintable("emulated internet: " + m_net->error()));
        qInfo().noquote() << "topology, up in" << timer.elapsed() << "ms:\n" + m_net->describe();
        for (Site router : {Site::RouterA, Site::RouterB}) {
            QString qdisc;
            m_net->exec(router, {"tc", "qdisc", "show", "dev", "wan0"}, &qdisc);
            QVERIFY2(qdisc.contains(QStringLiteral("tbf")) && qdisc.contains(QStringLiteral("rate 50Mbit")),
                     qPrintable(qdisc));
        }

        // The 2x2 of tst_swarm: 1,200 steps in two clusters of two reach 85%. --expect-nodes
        // plans once all four are in (the long first plan delay keeps it from planning for
        // fewer). The join string as a volunteer gets it: from `invite`, run next to the
        // coordinator.
        QString why;
        const QString join =
            m_net->startCoordinator(absoluteProgram(QStringLiteral("rookery-coordinator")),
                                    {"--port", "7400", "--status-port", QString::number(kStatusPort), "--relay-port",
                                     QString::number(kRelayPort), "--expect-nodes", "4", "--cluster-size", "2",
                                     "--first-plan-delay-ms", "60000", "--steps", "1200", "--averaging-interval", "10",
                                     "--reachability-timeout", QString::number(kReachabilityTimeoutS)},
                                    &m_coordinator, &why);
        QVERIFY2(!join.isEmpty(), qPrintable(why + logs()));
        const auto address = net::CoordinatorAddress::parse(join.toStdString());
        std::string token;
        try {
            token = readToken(m_net->filePath(QStringLiteral("coordinator")).toStdString() + "/operator-token");
        } catch (const Error &e) {
            QFAIL(e.what());
        }
        m_status = std::make_unique<StatusWatch>(*m_net, address.sha256, token);
        m_status->observe = [this](const QJsonObject &status) { observe(status); };

        m_sinceNodesStarted.start();
        for (const Home &home : kHomes)
            m_nodes[QLatin1String(home.name)] = &startNode(home, join);
    }

    void init()
    {
        if (m_broken)
            QSKIP("an earlier step failed");
    }
    void cleanup() { m_broken = m_broken || QTest::currentTestFailed(); }

    void allRegister()
    {
        QVERIFY2(m_status->waitUntil(
                     [&](const QJsonObject &) {
                         return std::all_of(std::begin(kHomes), std::end(kHomes),
                                            [&](const Home &h) { return !m_status->node(h.name).isEmpty(); });
                     },
                     90s),
                 qPrintable(m_status->error() + logs()));
        for (const Home &h : kHomes)
            qInfo() << h.name << "registered" << m_registeredMs[h.name] << "ms after the nodes started";
    }

    // Both map a port of their own on router A and are dialled back at it.
    void mappedNodesAreDirect()
    {
        const bool verdicts = m_status->waitUntil(
            [&](const QJsonObject &) {
                return checked(m_status->node("home-a1")) && checked(m_status->node("home-a2"));
            },
            std::chrono::seconds(kReachabilityTimeoutS + 20));
        QVERIFY2(verdicts, qPrintable("no verdict on A1 or A2:\n  " + brief(m_status->node("home-a1")) + "\n  " +
                                      brief(m_status->node("home-a2")) + logs()));
        const QString rules = m_net->redirectionsA();
        std::set<int> ports;
        for (const Home &h : {kHomes[0], kHomes[1]}) {
            const QJsonObject n = m_status->node(h.name);
            qInfo().noquote() << brief(n) << "- direct" << m_verdictMs[h.name] << "ms after the nodes started,"
                              << m_verdictMs[h.name] - m_registeredMs[h.name] << "ms after it registered";
            QVERIFY2(field(n, "reachability") == QLatin1String("direct"), qPrintable(brief(n) + logs()));
            // The address the router forwards (its WAN address and a mapped port), not the LAN one.
            const auto [host, port] = splitAddress(field(n, "address"));
            QCOMPARE(host, QString::fromLatin1(in::kRouterAWan));
            QVERIFY2(port > 0, qPrintable(brief(n)));
            ports.insert(port);
            const QRegularExpression dnat(QStringLiteral("dport %1 dnat ip to %2:\\d+").arg(port).arg(h.lanAddress));
            QVERIFY2(rules.contains(dnat), qPrintable("router A's redirections:\n" + rules + logs()));
        }
        QCOMPARE(ports.size(), size_t(2)); // one router address, two mapped ports
        qInfo().noquote() << "router A's redirections:\n" + rules.trimmed();
    }

    void natNodesAreUnreachable()
    {
        const bool verdicts = m_status->waitUntil(
            [&](const QJsonObject &) {
                return checked(m_status->node("home-b1")) && checked(m_status->node("home-b2"));
            },
            std::chrono::seconds(kReachabilityTimeoutS + 30));
        QVERIFY2(verdicts, qPrintable("no verdict on B1 or B2:\n  " + brief(m_status->node("home-b1")) + "\n  " +
                                      brief(m_status->node("home-b2")) + logs()));
        for (const Home &h : {kHomes[2], kHomes[3]}) {
            const QJsonObject n = m_status->node(h.name);
            qInfo().noquote() << brief(n) << "- unreachable" << m_verdictMs[h.name] << "ms after the nodes started,"
                              << m_verdictMs[h.name] - m_registeredMs[h.name] << "ms after it registered";
            QVERIFY2(field(n, "reachability") == QLatin1String("unreachable"), qPrintable(brief(n) + logs()));
            QVERIFY2(!field(n, "reachability_note").isEmpty(), qPrintable(brief(n)));
            // The coordinator records the source it sees: router B's address, so NAT works.
            QCOMPARE(splitAddress(field(n, "address")).first, QString::fromLatin1(in::kRouterBWan));
        }
        QCOMPARE(counts().value(QStringLiteral("reachable")).toInt(), 2);
        QCOMPARE(counts().value(QStringLiteral("unreachable")).toInt(), 2);

        // Anyone may read the public view: the same nodes and verdicts, and no address
        // (the routers' and the coordinator's are all IPv4 here), in notes neither.
        const QByteArray body = m_status->readPublic();
        QVERIFY2(!body.isEmpty(), qPrintable(m_status->error()));
        const QJsonObject pub = QJsonDocument::fromJson(body).object();
        QCOMPARE(pub.value(QStringLiteral("view")).toString(), QStringLiteral("public"));
        QCOMPARE(pub.value(QStringLiteral("nodes")).toArray().size(), 4);
        static const QRegularExpression ipv4(QStringLiteral("\\b\\d{1,3}(\\.\\d{1,3}){3}\\b"));
        QVERIFY2(!ipv4.match(QString::fromUtf8(body)).hasMatch(), body.constData());
        for (const QJsonValue &v : pub.value(QStringLiteral("nodes")).toArray()) {
            QVERIFY2(!v.toObject().contains(QStringLiteral("address")), body.constData());
            if (v.toObject().value(QStringLiteral("reachability")).toString() == QLatin1String("unreachable"))
                QVERIFY2(!field(v.toObject(), "reachability_note").isEmpty(), body.constData());
        }
    }

    // A1 dialling A2 where the swarm says A2 is (router A's WAN address, A2's mapped
    // port) from inside router A's LAN: "hairpin NAT". A fact of the routers, recorded
    // here; the test's expectations below follow it.
    void hairpinOnRouterA()
    {
        const int port = splitAddress(field(m_status->node("home-a2"), "address")).second;
        QString why;
        m_hairpin = m_net->canConnect(Site::HomeA1, in::kRouterAWan, port, &why);
        QString outside;
        const bool fromOutside = m_net->canConnect(Site::HomeB1, in::kRouterAWan, port, &outside);
        qInfo().noquote() << QStringLiteral("A1 -> %1:%2 (A2's mapping) from inside router A's LAN: %3; from B1: %4")
                                 .arg(in::kRouterAWan)
                                 .arg(port)
                                 .arg(m_hairpin ? QStringLiteral("connected") : "failed (" + why + ")",
                                      fromOutside ? QStringLiteral("connected") : "failed (" + outside + ")");
        QVERIFY2(fromOutside, qPrintable(outside + "\n" + m_net->redirectionsA() + m_net->pinholesA()));
        if (!m_hairpin)
            qInfo().noquote() << "router A does no hairpin NAT: miniupnpd's rules match only what comes in on wan0:\n" +
                                     m_net->redirectionsA().trimmed() + "\n" + m_net->pinholesA().trimmed();
    }

    // The plan: who is whose neighbour (pipeline and ring links), printed.
    void thePlan()
    {
        QVERIFY2(m_status->waitUntil([&](const QJsonObject &s) { return planned(s); }, 60s),
                 qPrintable(QJsonDocument(m_status->last()).toJson() + logs()));
        const QJsonObject &s = m_status->last();
        QStringList lines;
        for (const QJsonValue &c : s.value(QStringLiteral("clusters")).toArray()) {
            QStringList stages;
            for (const QJsonValue &st : c.toObject().value(QStringLiteral("stages")).toArray())
                stages << QStringLiteral("stage %1 %2 (layers %3-%4)")
                              .arg(number(st.toObject(), "stage"))
                              .arg(nameOf(st.toObject().value("node_id")))
                              .arg(number(st.toObject(), "first_layer"))
                              .arg(number(st.toObject(), "last_layer"));
            lines << QStringLiteral("cluster %1: %2").arg(number(c.toObject(), "id")).arg(stages.join(", "));
        }
        for (const QJsonValue &v : s.value(QStringLiteral("links")).toArray()) {
            const QJsonObject l = v.toObject();
            const QString from = nameOf(l.value("from")), to = nameOf(l.value("to"));
            m_neighbours.insert(std::minmax(from, to));
            if (field(l, "kind") == QLatin1String("pipeline"))
                m_pipelines.insert(std::minmax(from, to));
            lines << QStringLiteral("link (%1): %2 - %3").arg(field(l, "kind"), from, to);
        }
        qInfo().noquote() << "the plan:\n  " + lines.join("\n  ");
        // Two pipelines, and rings between the clusters: two of two when both are cut alike,
        // more when they are cut apart (a layer of one's first stage in the other's second),
        // one when the first stages hold only the Flatten, which has nothing to average (the
        // planner gives a node measured slow, under a loaded machine, no more: CI, 2026-12-06).
        QCOMPARE(m_pipelines.size(), size_t(2));
        QVERIFY2(m_neighbours.size() >= 3, qPrintable(lines.join("\n")));
    }

    // B1 and B2, both unreachable, link through the coordinator's relay when neighbours;
    // any other link has a node that can be dialled, and needs none.
    void unreachableNeighboursAreRelayed()
    {
        const bool relayed = neighbours("home-b1", "home-b2");
        if (!relayed) {
            qInfo("B1 and B2 are not neighbours in this plan: no link needs the relay");
            return;
        }
        QVERIFY2(m_status->waitUntil(
                     [&](const QJsonObject &) {
                         return counts().value(QStringLiteral("relay_grants")).toInteger() >= 1 &&
                                counts().value(QStringLiteral("relayed_bytes")).toInteger() > 0;
                     },
                     90s),
                 qPrintable(QJsonDocument(counts()).toJson() + logs()));
        qInfo() << "relayed:" << counts().value(QStringLiteral("relay_grants")).toInteger() << "grants,"
                << counts().value(QStringLiteral("relayed_bytes")).toInteger() << "bytes"
                << m_sinceNodesStarted.elapsed() << "ms after the nodes started";
        for (const char *name : {"home-b1", "home-b2"})
            QVERIFY2(m_nodes[name]->output().contains(QStringLiteral("linking through the coordinator's relay")),
                     qPrintable(m_nodes[name]->output().right(3000)));
    }

    // Every cluster trains 1,200 steps and reaches 85%; every node leaves with status 0.
    void theRunCompletesAt85Percent()
    {
        // A1 and A2 advertise router A's WAN address; as neighbours one dials the other at
        // it from inside router A's LAN, which needs hairpin NAT, and miniupnpd's rules do
        // none (hairpinOnRouterA). The dialler then falls back to the relay after 20 s
        // without a link (PeerMesh::Config::relayFallbackAfter): slower, but the run
        // completes in every plan.
        if (neighbours("home-a1", "home-a2") && !m_hairpin)
            qInfo("A1 and A2 are neighbours behind one router without hairpin NAT: they link through the relay");
        const bool done = test::waitFor(
            [&] {
                m_status->waitUntil([](const QJsonObject &) { return true; }, 0ms); // keeps the timings current
                return std::none_of(m_nodes.begin(), m_nodes.end(), [](auto &n) { return n.second->running(); });
            },
            std::chrono::milliseconds(std::max<qint64>(1000, kRunTimeoutMs - m_sinceNodesStarted.elapsed())));
        const qint64 total = m_sinceNodesStarted.elapsed();
        qInfo() << "first pipeline training" << m_trainingSeenMs << "ms after the nodes started; all nodes"
                << (done ? "left" : "still running") << "after" << total << "ms";
        std::vector<double> accuracies;
        for (const auto &[name, p] : m_nodes) {
            const double a = finalAccuracy(p->output());
            if (a >= 0) {
                qInfo("%s: final test accuracy %.2f%%", qPrintable(name), a * 100);
                accuracies.push_back(a);
            }
        }
        m_status->waitUntil([](const QJsonObject &) { return true; }, 1s);
        qInfo() << "relay: " << counts().value(QStringLiteral("relay_grants")).toInteger() << "grants,"
                << counts().value(QStringLiteral("relayed_bytes")).toInteger() << "bytes";
        QVERIFY2(done, qPrintable(logs()));
        for (const auto &[name, p] : m_nodes) {
            QVERIFY2(p->stop(1s) == 0, qPrintable(name + " did not exit with 0" + logs()));
            QVERIFY2(p->output().contains(QStringLiteral("left the swarm: the run is complete")),
                     qPrintable(p->output().right(3000)));
        }
        QCOMPARE(accuracies.size(), size_t(2)); // one first stage per cluster
        for (double a : accuracies)
            QVERIFY2(a >= 0.85, qPrintable(logs()));
    }

    void mappingsGoWithTheNodes()
    {
        for (auto &[name, p] : m_nodes) // still running only when the run could not complete
            QCOMPARE(p->stop(30s), 0);
        QVERIFY2(test::waitFor(
                     [&] {
                         const QString r = m_net->redirectionsA();
                         return !r.contains(in::kHomeA1) && !r.contains(in::kHomeA2);
                     },
                     10s),
                 qPrintable("router A still forwards to a node that left:\n" + m_net->redirectionsA() + logs()));
    }

    void cleanupTestCase()
    {
        m_status.reset();
        m_net.reset(); // stops the programs, removes the namespaces
    }
};

int main(int argc, char **argv)
{
    // The run takes minutes on a loaded 2-core machine: more than Qt Test's default five
    // for one function.
    if (qEnvironmentVariableIsEmpty("QTEST_FUNCTION_TIMEOUT"))
        qputenv("QTEST_FUNCTION_TIMEOUT", "900000");
    QCoreApplication app(argc, argv);
    TestEmulatedInternet test;
    return QTest::qExec(&test, argc, argv);
}
#include "tst_emulated_internet.moc"
