// SPDX-License-Identifier: GPL-3.0-or-later
// Acceptance: the desktop app attaches to a headless rookery-node over its control API
// and pauses it (the node's governor reports paused), quitting the app leaves the node
// running, a client with the wrong token is refused, and the app lists the node's
// checkpoints. One real node process serves every case, in order; the last stops it from
// the app.
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/paths.h"
#include "engine/control/control_client.h"
#include "engine/control/remote_engine.h"
#include "engine/control/snapshot_json.h"
#include "tests/integration/headless_node.h"
#include "ui/bridge/engine_bridge.h"
#include "ui/consent/consent_store.h"
#include "ui/main/desktop_controller.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

// What the node itself says, asked with its own token.
host::EngineSnapshot nodeStatus(const control::ControlEndpoint &e)
{
    control::ControlClient client("127.0.0.1", e.port, e.token);
    const auto reply = client.request("GET", "/v1/status");
    if (reply.status != 200)
        throw std::runtime_error("GET /v1/status: " + std::to_string(reply.status));
    return control::snapshotFromJson(reply.body);
}

} // namespace

class TstAttach : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        m_node = std::make_unique<test::HeadlessNode>();
        QVERIFY2(m_node->waitUntilServing(), "rookery-node did not start serving its control API");
        m_endpoint = m_node->endpoint();
        QVERIFY(test::waitFor([this] { return nodeStatus(m_endpoint).training.step > 0; }, 60s));
    }

    void cleanupTestCase() { m_node.reset(); }

    void wrongTokenIsRefused()
    {
        control::ControlClient wrong("127.0.0.1", m_endpoint.port, std::string(64, '0'));
        QCOMPARE(wrong.request("GET", "/v1/status").status, 401);
        QCOMPARE(wrong.request("POST", "/v1/pause").status, 401);
        QCOMPARE(wrong.request("POST", "/v1/stop").status, 401);
        control::ControlClient none("127.0.0.1", m_endpoint.port, "");
        QCOMPARE(none.request("POST", "/v1/pause").status, 401);
        QVERIFY(!nodeStatus(m_endpoint).governor.pausedByUser); // nothing got through

        // The desktop app's client, given a wrong token file, says so and never attaches.
        QTemporaryDir dir;
        const std::string tokenFile = dir.filePath(QStringLiteral("token")).toStdString();
        writePrivateFile(tokenFile, std::string(64, 'f') + "\n");
        control::RemoteEngine engine(control::RemoteTarget::parse(m_node->dataDir().string(), tokenFile), 100ms);
        QVERIFY(test::waitFor(
            [&engine] { return engine.snapshot().lastError.find("refused the token") != std::string::npos; }, 10s));
        QVERIFY(!engine.connected());
        QVERIFY(!engine.snapshot().running);
    }

    // Beyond progress, the node serves its checkpoints; the attached app lists them.
    void desktopSeesTheNodesCheckpoints()
    {
        QVERIFY(test::waitFor([this] { return !nodeStatus(m_endpoint).checkpoints.empty(); }, 60s));
        const auto newest = nodeStatus(m_endpoint).checkpoints.front();
        QVERIFY(newest.step >= 100);
        QCOMPARE(newest.step % 100, int64_t(0));
        QCOMPARE(newest.model, std::string("mlp"));
        control::RemoteEngine engine(control::RemoteTarget::parse(m_node->dataDir().string()), 100ms);
        QVERIFY(test::waitFor([&engine] { return !engine.snapshot().checkpoints.empty(); }, 10s));
        QVERIFY(engine.snapshot().checkpoints.front().step >= newest.step);
    }

    void desktopAttachesAndPauses()
    {
        QTemporaryDir dir;
        QSettings settings(dir.filePath(QStringLiteral("rookery.ini")), QSettings::IniFormat);
        ui::ConsentStore(settings).setGiven(true);
        auto engine =
            std::make_shared<control::RemoteEngine>(control::RemoteTarget::parse(m_node->dataDir().string()), 100ms);
        ui::DesktopOptions options;
        options.attachedTo = QString::fromStdString(m_node->dataDir().string());
        options.trayAvailable = false;
        options.pollMs = 100;
        ui::DesktopController controller(engine, settings, options);
        controller.start();
        ui::EngineBridge *bridge = controller.bridge();
        QVERIFY(test::waitFor(
            [bridge] {
                const auto &s = bridge->snapshot();
                return s.running && s.training.step > 0 && s.assignment.mode == "local";
            },
            30s));
        QCOMPARE(bridge->snapshot().governor.state, std::string("throttled")); // its CPU cap, 50%

        controller.togglePause(); // the Pause button
        QVERIFY(test::waitFor([bridge] { return bridge->snapshot().governor.state == "paused"; }, 10s));
        QVERIFY(bridge->snapshot().governor.pausedByUser);
        // The node's governor reports it too, and training holds.
        const auto paused = nodeStatus(m_endpoint);
        QCOMPARE(paused.governor.state, std::string("paused"));
        QVERIFY(paused.governor.pausedByUser);
        QTest::qWait(300); // a microbatch let through before the pause may still finish
        const int64_t step = nodeStatus(m_endpoint).training.step;
        QTest::qWait(1500);
        QCOMPARE(nodeStatus(m_endpoint).training.step, step);

        // Quitting the app detaches; the node goes on (paused) and resumes from the app.
        QSignalSpy quit(&controller, &ui::DesktopController::quitFinished);
        controller.requestQuit();
        QVERIFY(test::waitFor([&quit] { return quit.count() == 1; }, 10s));
        QCOMPARE(m_node->process().state(), QProcess::Running);
        QCOMPARE(nodeStatus(m_endpoint).governor.state, std::string("paused"));
        engine->resume();
        QVERIFY(test::waitFor([this] { return nodeStatus(m_endpoint).governor.state != "paused"; }, 10s));
        QVERIFY(test::waitFor([this, step] { return nodeStatus(m_endpoint).training.step > step; }, 30s));
    }

    void stopFromTheAppCheckpointsAndExits()
    {
        control::RemoteEngine engine(control::RemoteTarget::parse(m_node->dataDir().string()), 100ms);
        QVERIFY(test::waitFor([&engine] { return engine.connected(); }, 10s));
        std::atomic<bool> answered{false};
        std::string error = "none yet";
        engine.stopTraining([&](const std::string &e) {
            error = e;
            answered = true;
        });
        QVERIFY(test::waitFor([&answered] { return answered.load(); }, 10s));
        QCOMPARE(error, std::string());
        QVERIFY(m_node->process().waitForFinished(60000));
        QCOMPARE(m_node->process().exitStatus(), QProcess::NormalExit);
        QCOMPARE(m_node->process().exitCode(), 0);
        // It took its port and token files with it.
        QVERIFY(!std::filesystem::exists(m_node->dataDir() / control::kPortFileName));
        QVERIFY(!std::filesystem::exists(m_node->dataDir() / control::kTokenFileName));
    }

private:
    std::unique_ptr<test::HeadlessNode> m_node;
    control::ControlEndpoint m_endpoint;
};

QTEST_MAIN(TstAttach)
#include "tst_attach.moc"
