// SPDX-License-Identifier: GPL-3.0-or-later
// The local control API in one process: the server's door (token, loopback, Host
// header), the token and port files, and a node's routes over a real governor, as the
// desktop app's client reaches them.
#include <QtTest>

#include <sys/stat.h>

#include <QTemporaryDir>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/control/control_client.h"
#include "engine/control/control_files.h"
#include "engine/control/control_server.h"
#include "engine/control/node_control.h"
#include "engine/control/snapshot_json.h"
#include "engine/device/governor.h"
#include "tests/support/prometheus_parse.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

constexpr const char *kToken = "0123456789abcdef0123456789abcdef";

control::ControlServerConfig config()
{
    control::ControlServerConfig c;
    c.token = kToken;
    c.openPaths = {"/metrics"};
    return c;
}

// One request with the headers exactly as given: what a browser or a stray client sends.
int rawStatus(uint16_t port, const std::string &host, const std::string &authorization, const std::string &target)
{
    namespace beast = boost::beast;
    namespace http = beast::http;
    boost::asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.expires_after(5s);
    stream.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    http::request<http::empty_body> req(http::verb::get, target, 11);
    if (!host.empty())
        req.set(http::field::host, host);
    if (!authorization.empty())
        req.set(http::field::authorization, authorization);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    return int(res.result_int());
}

device::GovernorEnvironment quietEnvironment()
{
    device::GovernorEnvironment e; // no idle, power or memory sources: nothing but the user holds work
    e.cores = 1;
    return e;
}

} // namespace

class TstControlServer : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void refusesWithoutTheRightToken_data()
    {
        QTest::addColumn<QString>("authorization");
        QTest::addColumn<int>("status");
        QTest::newRow("right token") << QStringLiteral("Bearer %1").arg(QLatin1String(kToken)) << 200;
        QTest::newRow("no header") << QString() << 401;
        QTest::newRow("wrong token") << QStringLiteral("Bearer 0123456789abcdef0123456789abcdeX") << 401;
        QTest::newRow("a prefix of it") << QStringLiteral("Bearer 0123456789abcdef") << 401;
        QTest::newRow("other scheme") << QStringLiteral("Basic %1").arg(QLatin1String(kToken)) << 401;
    }
    void refusesWithoutTheRightToken()
    {
        QFETCH(QString, authorization);
        QFETCH(int, status);
        int calls = 0;
        control::ControlServer server(config(), [&calls](const control::ControlRequest &) {
            ++calls;
            return control::ControlResponse{200, "{}"};
        });
        QCOMPARE(rawStatus(server.port(), "127.0.0.1", authorization.toStdString(), "/v1/status"), status);
        QCOMPARE(calls, status == 200 ? 1 : 0); // a refused request never reaches the node
    }

    void metricsAreOpenAndCommandsAreNot()
    {
        control::ControlServer server(config(), [](const control::ControlRequest &r) {
            return control::ControlResponse{200, r.method + " " + r.path};
        });
        control::ControlClient anonymous("127.0.0.1", server.port(), "");
        QCOMPARE(anonymous.request("GET", "/metrics").status, 200);
        QCOMPARE(anonymous.request("POST", "/metrics").status, 401); // only reading is open
        const auto refused = anonymous.request("POST", "/v1/pause");
        QCOMPARE(refused.status, 401);
        QVERIFY(refused.body.find("control-token") != std::string::npos); // says where the token is
        control::ControlClient client("127.0.0.1", server.port(), kToken);
        const auto ok = client.request("POST", "/v1/pause?x=1");
        QCOMPARE(ok.status, 200);
        QCOMPARE(ok.body, std::string("POST /v1/pause"));
    }

    void answersOnlyLoopbackHostNames_data()
    {
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("status");
        QTest::newRow("127.0.0.1") << QStringLiteral("127.0.0.1:7480") << 200;
        QTest::newRow("localhost") << QStringLiteral("localhost:7480") << 200;
        QTest::newRow("[::1]") << QStringLiteral("[::1]:7480") << 200;
        QTest::newRow("a rebound name") << QStringLiteral("attacker.example:7480") << 403;
        QTest::newRow("a LAN address") << QStringLiteral("192.168.1.5:7480") << 403;
    }
    void answersOnlyLoopbackHostNames()
    {
        QFETCH(QString, host);
        QFETCH(int, status);
        control::ControlServer server(config(), [](const control::ControlRequest &) {
            return control::ControlResponse{200, "ok", "text/plain"};
        });
        QCOMPARE(rawStatus(server.port(), host.toStdString(), "", "/metrics"), status);
    }

    void listensOnLoopbackOnly()
    {
        auto c = config();
        c.bindAddress = "0.0.0.0";
        QVERIFY_THROWS_EXCEPTION(Error, control::ControlServer(c, {}));
        c.bindAddress = "127.0.0.1";
        c.token.clear();
        QVERIFY_THROWS_EXCEPTION(Error, control::ControlServer(c, {}));
    }

    void tokenFileIsPrivate()
    {
        QTemporaryDir dir;
        const std::filesystem::path d = dir.path().toStdString();
        const mode_t old = ::umask(0); // even a careless umask gives 0600
        writePrivateFile(d / control::kTokenFileName, std::string(kToken) + "\n");
        writePrivateFile(d / control::kPortFileName, "7480\n");
        ::umask(old);
        struct stat st = {};
        QCOMPARE(::stat((d / control::kTokenFileName).c_str(), &st), 0);
        QCOMPARE(st.st_mode & 0777, mode_t(0600));
        const auto e = control::readControlEndpoint(d);
        QCOMPARE(e.port, uint16_t(7480));
        QCOMPARE(e.token, std::string(kToken));
        QVERIFY(control::newToken() != control::newToken());
        QCOMPARE(control::newToken().size(), size_t(64));
        QVERIFY_THROWS_EXCEPTION(Error, control::readControlEndpoint(d / "elsewhere"));
        // A token others can read is no secret: refused, with the chmod that fixes it.
        std::filesystem::permissions(d / control::kTokenFileName, std::filesystem::perms(0644));
        QVERIFY_THROWS_EXCEPTION(Error, control::readToken(d / control::kTokenFileName));
    }

    void nodeRoutesDriveTheGovernor()
    {
        device::Governor governor({}, quietEnvironment());
        bool stopAsked = false;
        control::NodeControl node("local", [&stopAsked] { stopAsked = true; });
        node.setGovernor(&governor);
        node.setRunning(true);
        control::ControlServer server(config(), [&node](const control::ControlRequest &r) { return node.handle(r); });
        control::ControlClient client("127.0.0.1", server.port(), kToken);

        auto paused = client.request("POST", "/v1/pause");
        QCOMPARE(paused.status, 200);
        QCOMPARE(control::snapshotFromJson(paused.body).governor.state, std::string("paused"));
        QCOMPARE(governor.status().state, device::GovernorState::Paused);
        QVERIFY(governor.status().pausedByUser);
        QCOMPARE(client.request("GET", "/v1/pause").status, 405);
        QCOMPARE(client.request("POST", "/v1/resume").status, 200);
        QCOMPARE(governor.status().state, device::GovernorState::Running);
        QCOMPARE(client.request("POST", "/v1/snooze?minutes=0").status, 400);
        QCOMPARE(client.request("POST", "/v1/snooze?minutes=5").status, 200);
        QVERIFY(governor.status().snoozedUntilMs > 0);

        const auto before = governor.settings();
        QCOMPARE(client.request("PUT", "/v1/governor/settings", R"({"active.cpu-percent": 0})").status, 400);
        QVERIFY(governor.settings() == before); // whole or not at all
        QCOMPARE(client.request("PUT", "/v1/governor/settings", R"({"active.cpu-percent": 40})").status, 200);
        QCOMPARE(governor.settings().whenActive.cpuPercent, int64_t(40));
        const auto settings = control::keyValuesFromJson(client.request("GET", "/v1/governor/settings").body);
        QCOMPARE(settings.at("active.cpu-percent"), std::string("40"));

        const auto page = control::eventPageFromJson(client.request("GET", "/v1/events?after=0").body);
        QCOMPARE(page.events.size(), size_t(4)); // pause, resume, snooze, settings
        QCOMPARE(page.events.front().message, std::string("paused over the control API"));
        QCOMPARE(control::eventPageFromJson(client.request("GET", "/v1/events?after=3").body).events.size(), size_t(1));
        QCOMPARE(client.request("GET", "/v1/events?after=x").status, 400);
        QCOMPARE(client.request("GET", "/v1/nothing").status, 404);

        QCOMPARE(client.request("POST", "/v1/stop").status, 202);
        QVERIFY(stopAsked);
    }

    void nodeMetricsAreValidPrometheusText()
    {
        device::Governor governor({}, quietEnvironment());
        control::NodeControl node("swarm", [] {});
        node.setGovernor(&governor);
        control::NodeProgress p;
        p.training.samplesPerSecond = 1234.5;
        p.training.step = 10;
        p.samplesTotal = 640;
        p.ringRounds = 3;
        node.publish(p);
        p.samplesTotal = 64; // a new assignment counts from zero again; the counter must not drop
        p.ringRounds = 1;
        node.publish(p);
        governor.pause();
        const auto m = test::parsePrometheusText(node.metrics());
        QVERIFY2(m.error.empty(), m.error.c_str());
        QCOMPARE(m.value("rookery_node_samples_per_second"), std::optional<double>(1234.5));
        QCOMPARE(m.value("rookery_node_samples_total"), std::optional<double>(704));
        QCOMPARE(m.value("rookery_node_ring_rounds_total"), std::optional<double>(4));
        QCOMPARE(m.types.at("rookery_node_samples_total"), std::string("counter"));
        QCOMPARE(m.value("rookery_node_governor_state", {{"state", "paused"}}), std::optional<double>(1));
        QCOMPARE(m.value("rookery_node_governor_state", {{"state", "running"}}), std::optional<double>(0));
    }

    void prometheusCheckerRejectsBadText_data()
    {
        QTest::addColumn<QString>("text");
        QTest::newRow("no newline") << QStringLiteral("# HELP a x\n# TYPE a gauge\na 1");
        QTest::newRow("no type") << QStringLiteral("# HELP a x\na 1\n");
        QTest::newRow("bad name") << QStringLiteral("# HELP 1a x\n# TYPE 1a gauge\n1a 1\n");
        QTest::newRow("bad value") << QStringLiteral("# HELP a x\n# TYPE a gauge\na one\n");
        QTest::newRow("unquoted label") << QStringLiteral("# HELP a x\n# TYPE a gauge\na{b=c} 1\n");
        QTest::newRow("split family") << QStringLiteral(
            "# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\na{l=\"1\"} 1\nb 1\na{l=\"2\"} 1\n");
        QTest::newRow("negative counter") << QStringLiteral("# HELP a_total x\n# TYPE a_total counter\na_total -1\n");
        QTest::newRow("twice") << QStringLiteral("# HELP a x\n# TYPE a gauge\na 1\na 2\n");
    }
    void prometheusCheckerRejectsBadText()
    {
        QFETCH(QString, text);
        QVERIFY(!test::parsePrometheusText(text.toStdString()).error.empty());
    }
};

QTEST_APPLESS_MAIN(TstControlServer)
#include "tst_control_server.moc"
