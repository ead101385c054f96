// SPDX-License-Identifier: GPL-3.0-or-later
// The local control API in one process: the server's door (token, loopback, Host
// header), the token and port files, the routes over an engine, and RemoteEngine, their
// mirror, as the desktop app attaches with it.
#include <QtTest>

#include <sys/stat.h>

#include <QTemporaryDir>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/common/version.h"
#include "engine/control/control_client.h"
#include "engine/control/control_files.h"
#include "engine/control/control_server.h"
#include "engine/control/engine_control.h"
#include "engine/control/remote_engine.h"
#include "engine/control/snapshot_json.h"
#include "tests/fakes/fake_engine.h"
#include "tests/support/command_result.h"
#include "tests/support/prometheus_parse.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

constexpr const char *kToken = "0123456789abcdef0123456789abcdef";
constexpr const char *kAddress = "wss://127.0.0.1:7400/\x23sha256=ab"; // \x23: moc misreads a "#"

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

    // The routes are EngineApi's methods: each reaches the engine, and what it answers
    // comes back as HTTP.
    void routesDriveTheEngine()
    {
        test::FakeEngine engine;
        engine.setConsent(true);
        control::EngineControl routes(engine);
        control::ControlServer server(config(),
                                      [&routes](const control::ControlRequest &r) { return routes.handle(r); });
        control::ControlClient client("127.0.0.1", server.port(), kToken);

        auto paused = client.request("POST", "/v1/pause");
        QCOMPARE(paused.status, 200);
        QCOMPARE(control::snapshotFromJson(paused.body).governor.state, std::string("paused"));
        QVERIFY(engine.state().governor.pausedByUser);
        QCOMPARE(client.request("GET", "/v1/pause").status, 405);
        QCOMPARE(client.request("POST", "/v1/resume").status, 200);
        QCOMPARE(engine.state().governor.state, std::string("running"));
        QCOMPARE(client.request("POST", "/v1/snooze?minutes=0").status, 400);
        QCOMPARE(client.request("POST", "/v1/snooze?minutes=5").status, 200);
        QVERIFY(engine.received("snooze:5"));

        engine.settingsError = "governor setting 'active.cpu-percent' must be between 1 and 100, not 0";
        const auto refused = client.request("PUT", "/v1/governor/settings", R"({"active.cpu-percent": 0})");
        QCOMPARE(refused.status, 400);
        QVERIFY2(refused.body.find("active.cpu-percent") != std::string::npos, refused.body.c_str());
        QVERIFY(engine.governorSettings().empty()); // whole or not at all
        engine.settingsError.clear();
        QCOMPARE(client.request("PUT", "/v1/governor/settings", R"({"active.cpu-percent": 40})").status, 200);
        const auto settings = control::keyValuesFromJson(client.request("GET", "/v1/governor/settings").body);
        QCOMPARE(settings.at("active.cpu-percent"), std::string("40"));
        QCOMPARE(client.request("PUT", "/v1/governor/settings", "[1, 2]").status, 400);

        // The engine's own events come through the same pages, in order, after ours.
        engine.pushEvent({1, host::EngineEvent::Level::Warning, "swarm", "cannot reach the coordinator"});
        const auto page = control::eventPageFromJson(client.request("GET", "/v1/events?after=0").body);
        QCOMPARE(page.events.size(), size_t(5)); // pause, resume, snooze, settings, the engine's
        QCOMPARE(page.events.front().message, std::string("paused over the control API"));
        QCOMPARE(page.events.back().message, std::string("cannot reach the coordinator"));
        QCOMPARE(control::eventPageFromJson(client.request("GET", "/v1/events?after=3").body).events.size(), size_t(2));
        QCOMPARE(client.request("GET", "/v1/events?after=x").status, 400);
        QCOMPARE(client.request("GET", "/v1/nothing").status, 404);

        QCOMPARE(client.request("POST", "/v1/local").status, 200);
        QVERIFY(engine.received("start-local"));
        const std::string join = control::toJson(std::map<std::string, std::string>{{"address", kAddress}});
        QCOMPARE(client.request("POST", "/v1/join", join).status, 200);
        QVERIFY(engine.received(std::string("join:") + kAddress));
        QCOMPARE(client.request("POST", "/v1/join", "{}").status, 400);
        QCOMPARE(client.request("POST", "/v1/checkpoints/delete?id=7").status, 200);
        QVERIFY(engine.received("delete-checkpoint:7"));
        QCOMPARE(client.request("POST", "/v1/stop").status, 202);
        QVERIFY(engine.received("stop"));
        engine.setConsent(false);
        const auto noConsent = client.request("POST", "/v1/demo-swarm?nodes=4");
        QCOMPARE(noConsent.status, 409);
        QVERIFY2(noConsent.body.find("consent") != std::string::npos, noConsent.body.c_str());
    }

    // A host that trains what it was started with refuses other work with its sentence.
    void hostMayRefuseStartingOtherWork()
    {
        test::FakeEngine engine;
        engine.setConsent(true);
        control::EngineControlOptions options;
        options.jobCommands = false;
        options.refusal = "this node trains what it was started with";
        control::EngineControl routes(engine, options);
        control::ControlServer server(config(),
                                      [&routes](const control::ControlRequest &r) { return routes.handle(r); });
        control::ControlClient client("127.0.0.1", server.port(), kToken);
        for (const char *path :
             {"/v1/local", "/v1/demo-swarm?nodes=3", "/v1/checkpoints/resume?id=1", "/v1/consent?given=false"}) {
            const auto reply = client.request("POST", path);
            QCOMPARE(reply.status, 409);
            QVERIFY2(reply.body.find("trains what it was started with") != std::string::npos, reply.body.c_str());
        }
        QVERIFY(!engine.receivedStart());
        QVERIFY(!engine.received("consent:false"));
    }

    // RemoteEngine is the routes' mirror: an attached desktop sees the engine's snapshot
    // and events, and its commands reach the engine with their answers.
    void remoteEngineMirrorsTheEngine()
    {
        QTemporaryDir dir;
        test::FakeEngine engine;
        engine.setConsent(true);
        host::EngineSnapshot published;
        published.consentGiven = true;
        published.running = true;
        published.assignment.mode = "swarm";
        published.assignment.stage = 1;
        published.training.step = 42;
        published.training.ringRounds = 3;
        published.peers.push_back({"abc", "node-2", 0, 1, "training", 1500, false});
        engine.publish(published);
        engine.pushEvent({1, host::EngineEvent::Level::Info, "swarm", "assigned stage 1"});
        control::EngineControl routes(engine);
        control::ControlServer server(config(),
                                      [&routes](const control::ControlRequest &r) { return routes.handle(r); });
        const auto tokenFile = std::filesystem::path(dir.path().toStdString()) / control::kTokenFileName;
        writePrivateFile(tokenFile, std::string(kToken) + "\n");
        control::RemoteEngine remote(control::RemoteTarget::parse(std::to_string(server.port()), tokenFile.string()),
                                     50ms);

        QVERIFY(test::waitFor([&remote] { return remote.connected(); }, 10s));
        auto seen = remote.snapshot();
        auto expected = engine.snapshot();
        seen.sequence = expected.sequence = 0; // each side counts its own publications
        QVERIFY(seen == expected);
        std::vector<host::EngineEvent> events;
        QVERIFY(test::waitFor(
            [&] {
                for (auto &e : remote.takeEvents())
                    events.push_back(std::move(e));
                return std::any_of(events.begin(), events.end(),
                                   [](const auto &e) { return e.message == "assigned stage 1"; });
            },
            10s));

        test::CommandResult joined;
        remote.joinSwarm(kAddress, joined.callback());
        QCOMPARE(joined.wait(10s), std::string());
        QVERIFY(engine.received(std::string("join:") + kAddress));
        test::CommandResult deleted;
        remote.deleteCheckpoint(9, deleted.callback());
        QCOMPARE(deleted.wait(10s), std::string());
        QVERIFY(engine.received("delete-checkpoint:9"));
        engine.setConsent(false);
        test::CommandResult refused;
        remote.startLocal(refused.callback());
        QVERIFY(refused.wait(10s).find("consent") != std::string::npos);
        remote.pause();
        QVERIFY(test::waitFor([&engine] { return engine.received("pause"); }, 10s));
    }

    void metricsComeFromTheSnapshot()
    {
        test::FakeEngine engine;
        host::EngineSnapshot s;
        s.running = true;
        s.assignment.mode = "swarm";
        s.training.samplesPerSecond = 1234.5;
        s.training.step = 10;
        s.training.ringRounds = 4;
        s.contribution.samplesTotal = 704;
        s.governor.state = "paused";
        engine.publish(s);
        control::EngineControl routes(engine);
        const auto m = test::parsePrometheusText(routes.metrics());
        QVERIFY2(m.error.empty(), m.error.c_str());
        QCOMPARE(m.value("rookery_node_samples_per_second"), std::optional<double>(1234.5));
        QCOMPARE(m.value("rookery_node_samples_total"), std::optional<double>(704));
        QCOMPARE(m.value("rookery_node_ring_rounds_total"), std::optional<double>(4));
        QCOMPARE(m.types.at("rookery_node_samples_total"), std::string("counter"));
        QCOMPARE(m.value("rookery_node_governor_state", {{"state", "paused"}}), std::optional<double>(1));
        QCOMPARE(m.value("rookery_node_governor_state", {{"state", "running"}}), std::optional<double>(0));
        QCOMPARE(m.value("rookery_node_info", {{"version", kVersion}, {"mode", "swarm"}, {"model", ""}}),
                 std::optional<double>(1));
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
