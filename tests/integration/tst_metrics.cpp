// SPDX-License-Identifier: GPL-3.0-or-later
// Acceptance: GET /metrics serves valid Prometheus text (format 0.0.4, parsed strictly
// here) with the node's throughput from a real rookery-node process, and with the
// coordinator's peer count from a coordinator that real clients register with.
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/version.h"
#include "engine/control/control_client.h"
#include "tests/engine/coord/coord_test_support.h"
#include "tests/integration/headless_node.h"
#include "tests/support/https_get.h"
#include "tests/support/prometheus_parse.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

struct Scrape
{
    int status = 0;
    std::string contentType;
    test::PrometheusExposition metrics;
};

Scrape parsed(int status, std::string contentType, const std::string &body)
{
    return {status, std::move(contentType), test::parsePrometheusText(body)};
}

// As Prometheus scrapes the node: plain HTTP on loopback, no token.
Scrape scrapeNode(uint16_t port)
{
    control::ControlClient client("127.0.0.1", port, "");
    const auto r = client.request("GET", "/metrics");
    return parsed(r.status, r.contentType, r.body);
}

// As Prometheus scrapes the coordinator: HTTPS on the status port. (Prometheus would
// check the certificate against the swarm's CA; tst_status_api checks the pin.)
Scrape scrapeCoordinator(uint16_t port)
{
    const auto r = test::httpsGet(port, "/metrics");
    return parsed(r.status, r.contentType, r.body);
}

void checkFormat(const Scrape &s)
{
    QCOMPARE(s.status, 200);
    QVERIFY2(s.contentType.starts_with("text/plain; version=0.0.4"), s.contentType.c_str());
    QVERIFY2(s.metrics.error.empty(), s.metrics.error.c_str());
}

} // namespace

class TstMetrics : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void nodeServesItsThroughput()
    {
        test::HeadlessNode node;
        QVERIFY2(node.waitUntilServing(), "rookery-node did not start serving its control API");
        const uint16_t port = node.endpoint().port;
        QVERIFY(test::waitFor(
            [port] { return scrapeNode(port).metrics.value("rookery_node_samples_total").value_or(0) > 0; }, 60s));
        const Scrape s = scrapeNode(port);
        checkFormat(s);
        const auto &m = s.metrics;
        QCOMPARE(m.types.at("rookery_node_samples_per_second"), std::string("gauge"));
        QCOMPARE(m.types.at("rookery_node_samples_total"), std::string("counter"));
        QCOMPARE(m.types.at("rookery_node_step"), std::string("gauge"));
        QVERIFY(m.value("rookery_node_samples_per_second").value_or(0) > 0);
        QVERIFY(m.value("rookery_node_step").value_or(0) > 0);
        QCOMPARE(m.value("rookery_node_training"), std::optional<double>(1));
        // Under its CPU cap (50%) the governor throttles: one state is 1, the others 0.
        QCOMPARE(m.value("rookery_node_governor_state", {{"state", "throttled"}}), std::optional<double>(1));
        QCOMPARE(m.value("rookery_node_governor_state", {{"state", "paused"}}), std::optional<double>(0));
        QVERIFY(m.value("rookery_node_info", {{"version", kVersion}, {"mode", "local"}, {"model", "mlp"}}));
        // A counter only grows.
        const double before = *m.value("rookery_node_samples_total");
        QVERIFY(test::waitFor(
            [port, before] { return *scrapeNode(port).metrics.value("rookery_node_samples_total") > before; }, 30s));
    }

    void coordinatorServesItsPeerCount()
    {
        QTemporaryDir dir;
        net::NetContext net(1);
        coord::Coordinator coordinator(test::testSettings(dir.filePath(QStringLiteral("coord")).toStdString()));
        const uint16_t port = coordinator.statusPort();
        const Scrape empty = scrapeCoordinator(port);
        checkFormat(empty);
        QCOMPARE(empty.metrics.value("rookery_coordinator_peers"), std::optional<double>(0));

        std::vector<std::unique_ptr<test::TestNode>> nodes;
        for (int i = 0; i < 2; ++i) {
            nodes.push_back(std::make_unique<test::TestNode>());
            nodes.back()->start(net, coordinator.coordinatorAddress(), 50, uint64_t(test::mlpDemandBytes()) * 2);
        }
        QVERIFY(test::waitFor(
            [port] {
                const auto m = scrapeCoordinator(port).metrics;
                return m.value("rookery_coordinator_peers") == 2.0 &&
                       m.value("rookery_coordinator_heartbeats_total").value_or(0) > 0;
            },
            30s));
        const Scrape s = scrapeCoordinator(port);
        checkFormat(s);
        const auto &m = s.metrics;
        QCOMPARE(m.types.at("rookery_coordinator_peers"), std::string("gauge"));
        QCOMPARE(m.types.at("rookery_coordinator_registrations_total"), std::string("counter"));
        QCOMPARE(m.types.at("rookery_coordinator_heartbeats_total"), std::string("counter"));
        QCOMPARE(m.value("rookery_coordinator_registrations_total"), std::optional<double>(2));
        QCOMPARE(m.value("rookery_coordinator_nodes", {{"presence", "online"}}), std::optional<double>(2));
        QVERIFY(!m.help.at("rookery_coordinator_peers").empty());

        // One goes away: its link closes, and the count drops.
        nodes.pop_back();
        QVERIFY(test::waitFor(
            [port] { return scrapeCoordinator(port).metrics.value("rookery_coordinator_peers") == 1.0; }, 30s));
        nodes.clear();
        coordinator.stop();
    }
};

QTEST_APPLESS_MAIN(TstMetrics)
#include "tst_metrics.moc"
