// SPDX-License-Identifier: GPL-3.0-or-later
// Restarting the coordinator brings its state back from SQLite: the same address (the
// certificate pin), the same run, and nodes that reconnect by themselves and keep
// their assignments.
#include <QtTest>

#include <QTemporaryDir>

#include <set>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/coord/coord_json.h"
#include "engine/coord/coordinator_store.h"
#include "engine/store/schema.h"
#include "tests/engine/coord/coord_test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

class TestCoordinatorRestart : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void nodesReconnectAndKeepTheirAssignments()
    {
        QTemporaryDir dir;
        const auto dataDir = dir.filePath("coord").toStdString();
        auto settings = test::testSettings(dataDir);
        settings.firstPlanDelay = 300ms;
        net::NetContext ctx(1);
        auto coordinator = std::make_unique<coord::Coordinator>(settings);
        const std::string address = coordinator->address();
        const std::string runId = coordinator->run().runId;
        std::vector<std::unique_ptr<test::TestNode>> nodes;
        const uint64_t memory = uint64_t(double(test::mlpDemandBytes()) * 0.6);
        for (int i = 0; i < 4; ++i) {
            nodes.push_back(std::make_unique<test::TestNode>());
            nodes.back()->start(ctx, coordinator->coordinatorAddress(), 40 + 10 * i, memory);
        }
        auto allTraining = [&] {
            return std::all_of(nodes.begin(), nodes.end(), [](const auto &n) { return n->training(); });
        };
        QVERIFY(test::eventually(allTraining));
        std::map<std::string, coord::Assignment> before;
        for (const auto &n : nodes)
            before.emplace(n->identity.nodeId(), n->assignment());

        // Stop it (its port stays ours to reuse) and start it again on the same data.
        settings.port = coordinator->port();
        settings.statusPort = coordinator->statusPort();
        coordinator.reset();
        QVERIFY(test::eventually([&] {
            return std::all_of(nodes.begin(), nodes.end(), [](const auto &n) { return n->disconnectCount() >= 1; });
        }));
        coordinator = std::make_unique<coord::Coordinator>(settings);
        QCOMPARE(coordinator->address(), address);
        QCOMPARE(coordinator->run().runId, runId);
        // Every node comes back through its reconnection back-off and re-registers with
        // the same identity; the coordinator hands back the assignment it had.
        QVERIFY(test::eventually([&] {
            return std::all_of(nodes.begin(), nodes.end(), [](const auto &n) { return n->registrationCount() >= 2; });
        }));
        for (const auto &n : nodes) {
            const auto reg = *n->client->registration();
            QCOMPARE(reg.assignment, before.at(n->identity.nodeId()));
            QCOMPARE(reg.run.runId, runId);
        }
        QTest::qWait(500); // and no re-plan follows: nothing changed
        for (const auto &n : nodes)
            QCOMPARE(n->assignment(), before.at(n->identity.nodeId()));
        QCOMPARE(coordinator->counters().nodesOnline, nodes.size());
        const auto status = coordinator->statusJson();
        QVERIFY(status.find("\"presence\":\"lost\"") == std::string::npos);
        nodes.clear();
    }

    void nodesThatDoNotReturnAreReplannedAfterTheRestartGrace()
    {
        QTemporaryDir dir;
        auto settings = test::testSettings(dir.filePath("coord").toStdString());
        settings.firstPlanDelay = 300ms;
        settings.restartGrace = 1500ms;
        net::NetContext ctx(1);
        auto coordinator = std::make_unique<coord::Coordinator>(settings);
        const uint64_t memory = uint64_t(double(test::mlpDemandBytes()) * 0.6);
        std::vector<std::unique_ptr<test::TestNode>> nodes;
        for (int i = 0; i < 4; ++i) {
            nodes.push_back(std::make_unique<test::TestNode>());
            nodes.back()->start(ctx, coordinator->coordinatorAddress(), 50, memory);
        }
        QVERIFY(test::eventually(
            [&] { return std::all_of(nodes.begin(), nodes.end(), [](const auto &n) { return n->training(); }); }));
        settings.port = coordinator->port();
        settings.statusPort = coordinator->statusPort();
        const std::string gone = nodes[0]->identity.nodeId();
        nodes[0]->client.reset(); // this one does not come back
        coordinator.reset();
        coordinator = std::make_unique<coord::Coordinator>(settings);
        QVERIFY(test::eventually([&] {
            const auto a = coordinator->assignments();
            return a.count(gone) && !a.at(gone).isTraining();
        }));
        // The survivors train again, under a plan whose rings no longer name the node that left.
        const auto survivorsReplanned = [&] {
            std::set<std::string> inRings;
            for (size_t i = 1; i < nodes.size(); ++i) {
                if (!nodes[i]->training())
                    return false;
                for (const auto &r : nodes[i]->assignment().rings) // every member is a neighbour of some survivor
                    for (const auto *m : {&r.previous, &r.next})
                        inRings.insert(m->nodeId);
            }
            return !inRings.count(gone);
        };
        QVERIFY(test::eventually(survivorsReplanned));
        nodes.clear();
    }

    void storeRoundTripsItsState()
    {
        QTemporaryDir dir;
        const auto path = std::filesystem::path(dir.filePath("rookery.db").toStdString());
        coord::Assignment a;
        a.version = 7;
        a.state = coord::AssignmentState::Training;
        a.cluster = 2;
        a.clusterCount = 3;
        a.stage = 1;
        a.stages = 2;
        a.firstLayer = 2;
        a.lastLayer = 6;
        a.previous = {"p", "10.0.0.1:1"};
        a.rings = {{(uint64_t(2) << 32) | 6, 2, 6, 1, 3, {"x", "10.0.0.9:1"}, {"y", "10.0.0.3:1", true}}};
        a.shard = {2, 3};
        a.weightsFrom = {"x", "10.0.0.9:1"};
        const coord::StoredVolunteer v{"n1", "laptop", "10.0.0.2:1", test::profileJson(20, 1 << 30), 5e6, "CERT", "t",
                                       1,    2,        "online"};
        {
            coord::CoordinatorStore s(path);
            s.saveVolunteer(v);
            s.saveRun({"run-1", 10, "{}", "{\"plan\":1}"});
            s.saveAssignment("run-1", "n1", std::make_shared<const coord::Assignment>(a));
            s.saveNonce(std::string(16, 'n'), "n1", 123);
            s.saveNonce(std::string(16, 'm'), "n1", 5);
            s.saveMetrics({{"n1", 1000, {12.5, 40, 0.5, coord::NodeActivity::Training, 2560, 0.8}}});
            s.prune(100, 0); // forgets the nonce seen at 5
            s.savePlan("run-1", "{\"plan\":2}");
        }
        coord::CoordinatorStore s(path);
        const auto state = s.load();
        QCOMPARE(state.volunteers.size(), size_t(1));
        QVERIFY(state.volunteers[0] == v);
        QVERIFY(state.run.has_value());
        QCOMPARE(state.run->id, std::string("run-1"));
        QCOMPARE(state.run->planJson, std::string("{\"plan\":2}"));
        QCOMPARE(state.assignments.at("n1"), a);
        QCOMPARE(state.nonces.size(), size_t(1));
        QCOMPARE(state.nonces[0].first, std::string(16, 'n'));
        const auto metrics = s.metrics("n1");
        QCOMPARE(metrics.size(), size_t(1));
        QCOMPARE(metrics[0].report, (coord::NodeReport{12.5, 40, 0.5, coord::NodeActivity::Training, 2560, 0.8}));
    }

    // A row written by protocol 1 lists every ring member; it is read as the seat it
    // describes. A ring that cannot be (rank past its size, a lone member with
    // neighbours) is an error that names it.
    void storedRingsOfEitherFormAreRead()
    {
        using nlohmann::json;
        const auto row = [](json ring) {
            return json{{"version", 3},        {"state", "training"},     {"reason", ""},
                        {"cluster", 0},        {"cluster_count", 3},      {"stage", 0},
                        {"stages", 1},         {"first_layer", 0},        {"last_layer", 6},
                        {"previous", nullptr}, {"next", nullptr},         {"shard_index", 0},
                        {"shard_count", 3},    {"weights_from", nullptr}, {"rings", json::array({ring})}}
                .dump();
        };
        const auto member = [](const char *id) { return json{{"node_id", id}, {"address", "10.0.0.1:1"}}; };
        const json seat = {{"ring_id", 6}, {"first_layer", 0}, {"last_layer", 6}};
        json old = seat;
        old["rank"] = 2;
        old["members"] = {member("a"), member("b"), member("c")};
        const auto read = coord::assignmentFromJson(row(old));
        QCOMPARE(read.rings.size(), size_t(1));
        QCOMPARE(read.rings[0].size, size_t(3));
        QCOMPARE(read.rings[0].previous.nodeId, std::string("b"));
        QCOMPARE(read.rings[0].next.nodeId, std::string("a"));
        QCOMPARE(coord::assignmentFromJson(coord::toJson(read)), read);
        const auto refused = [&](const json &ring, const char *words) {
            try {
                coord::assignmentFromJson(row(ring));
            } catch (const Error &e) {
                return std::string(e.what()).find(words) != std::string::npos;
            }
            return false;
        };
        json pastEnd = seat;
        pastEnd["rank"] = 3;
        pastEnd["members"] = {member("a")};
        QVERIFY(refused(pastEnd, "past its 1 members"));
        json half = seat;
        half.update({{"rank", 0}, {"size", 1}, {"previous", member("a")}, {"next", nullptr}});
        QVERIFY(refused(half, "without both neighbours"));
        json outside = seat;
        outside.update({{"rank", 4}, {"size", 2}, {"previous", member("a")}, {"next", member("a")}});
        QVERIFY(refused(outside, "rank 4 of 2"));
    }

    void migratesAVersion2Database()
    {
        QTemporaryDir dir;
        const auto path = std::filesystem::path(dir.filePath("rookery.db").toStdString());
        {
            store::Database db = store::openRookeryDatabase(path);
            // As a build before the coordinator left it.
            db.exec("DROP TABLE coord_volunteers; DROP TABLE coord_runs; DROP TABLE coord_assignments; "
                    "DROP TABLE coord_metrics; DROP TABLE coord_nonces; DROP TABLE IF EXISTS contributions; "
                    "DROP TABLE IF EXISTS coord_invites; "
                    "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
        }
        coord::CoordinatorStore s(path);
        QVERIFY(s.load().volunteers.empty());
        store::Database db(path, store::Database::Access::ReadOnly);
        QCOMPARE(store::schemaVersion(db), store::kSchemaVersion);
        QCOMPARE(
            db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name LIKE 'coord_%' AND type = 'table'").value(),
            int64_t(6)); // volunteers, runs, assignments, metrics, nonces, invites
    }
};

QTEST_APPLESS_MAIN(TestCoordinatorRestart)
#include "tst_coordinator_restart.moc"
