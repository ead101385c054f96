// SPDX-License-Identifier: GPL-3.0-or-later
// The coordinator's status document as the desktop app's peer graph and assignment card
// read it: peers by cluster and stage, links, this node's place and its pipeline's loss;
// and the feed a headless node keeps of it (and of its checkpoints) for its control API.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/ip/tcp.hpp>

#include "engine/common/error.h"
#include "engine/host/swarm_status.h"
#include "tests/engine/coord/coord_test_support.h"

using namespace rookery;

namespace {

// Two clusters (ids 3 and 7: ids have gaps once clusters dissolve) of two stages, plus a
// volunteer still waiting and one that was lost.
const char *const kStatus =
    "{"
    "  \"swarm\": \"rookery\", \"coordinator\": \"wss://127.0.0.1:7400/#sha256=ab\","
    "  \"run\": {\"id\": \"run-1\", \"model\": \"mlp\", \"layers\": 6, \"total_steps\": 5000},"
    "  \"clusters\": [{\"id\": 3, \"stages\": [{\"stage\": 0}, {\"stage\": 1}]},"
    "               {\"id\": 7, \"stages\": [{\"stage\": 0}, {\"stage\": 1}]}],"
    "  \"links\": [{\"kind\": \"pipeline\", \"cluster\": 3, \"from\": \"a\", \"to\": \"b\"},"
    "            {\"kind\": \"pipeline\", \"cluster\": 7, \"from\": \"c\", \"to\": \"d\"},"
    "            {\"kind\": \"ring\", \"ring_id\": 2, \"from\": \"a\", \"to\": \"c\"}],"
    "  \"nodes\": ["
    "    {\"id\": \"a\", \"name\": \"ada\", \"presence\": \"online\", \"activity\": \"training\", \"cluster\": 3, "
    "\"stage\": 0,"
    "     \"first_layer\": 0, \"last_layer\": 2, \"samples_per_second\": 410.5, \"loss\": 0},"
    "    {\"id\": \"b\", \"name\": \"basil\", \"presence\": \"online\", \"activity\": \"training\", \"cluster\": 3, "
    "\"stage\": 1,"
    "     \"first_layer\": 2, \"last_layer\": 6, \"samples_per_second\": 400, \"loss\": 0.61},"
    "    {\"id\": \"c\", \"name\": \"cleo\", \"presence\": \"online\", \"activity\": \"paused\", \"cluster\": 7, "
    "\"stage\": 0,"
    "     \"first_layer\": 0, \"last_layer\": 2, \"samples_per_second\": 0, \"loss\": 0},"
    "    {\"id\": \"d\", \"name\": \"dara\", \"presence\": \"lost\", \"activity\": \"training\", \"cluster\": 7, "
    "\"stage\": 1,"
    "     \"first_layer\": 2, \"last_layer\": 6, \"samples_per_second\": 380, \"loss\": 0.7},"
    "    {\"id\": \"e\", \"name\": \"emil\", \"presence\": \"online\", \"activity\": \"waiting\", \"cluster\": -1,"
    "     \"reachability\": \"unreachable\", \"reachability_note\": \"peers cannot dial it at 192.0.2.5:4100\"}"
    "  ]"
    "}";

const host::PeerView *peer(const host::SwarmStatusView &v, const std::string &id)
{
    for (const auto &p : v.peers)
        if (p.id == id)
            return &p;
    return nullptr;
}

} // namespace

class TestSwarmStatus : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void placesThisNode()
    {
        const auto v = host::parseSwarmStatus(kStatus, "a");
        const auto &a = v.self;
        QCOMPARE(a.mode, std::string("swarm"));
        QCOMPARE(a.cluster, 0);
        QCOMPARE(a.clusterCount, 2);
        QCOMPARE(a.stage, 0);
        QCOMPARE(a.stageCount, 2);
        QCOMPARE(a.role, std::string("root"));
        QCOMPARE(a.layers, (std::vector<std::string>{"Flatten", "Linear(784->512)"}));
        QCOMPARE(a.model, std::string("mlp"));
        QCOMPARE(v.totalSteps, int64_t(5000));
        QCOMPARE(v.clusterLoss, 0.61);   // the leaf of its pipeline, basil
        QVERIFY(a.reachability.empty()); // an older coordinator says nothing of it
    }

    // A job file's model, which this build does not know by name: its layers come from
    // the run's own list, and this node's share from its stage in the plan.
    void aJobsModelAndThisNodesShare()
    {
        const char *const status =
            "{\"coordinator\": \"wss://127.0.0.1:7400/#sha256=ab\","
            " \"run\": {\"id\": \"run-2\", \"job\": \"fashion-mnist-rescnn\", \"model\": \"rescnn\","
            "  \"layers\": 3, \"layer_names\": [\"Conv2d(1->64, k3)\", \"ReLU\", \"Linear(128->10)\"],"
            "  \"parameters\": 2100000, \"total_steps\": 4000},"
            " \"clusters\": [{\"id\": 0, \"stages\": ["
            "   {\"stage\": 0, \"node_id\": \"a\", \"parameters\": 640, \"memory_bytes\": 1000},"
            "   {\"stage\": 1, \"node_id\": \"b\", \"parameters\": 1290, \"memory_bytes\": 88000000}]}],"
            " \"links\": [],"
            " \"nodes\": ["
            "  {\"id\": \"a\", \"presence\": \"online\", \"cluster\": 0, \"stage\": 0, \"first_layer\": 0, "
            "\"last_layer\": 2},"
            "  {\"id\": \"b\", \"presence\": \"online\", \"cluster\": 0, \"stage\": 1, \"first_layer\": 2, "
            "\"last_layer\": 3}]}";
        const auto v = host::parseSwarmStatus(status, "b");
        QCOMPARE(v.self.job, std::string("fashion-mnist-rescnn"));
        QCOMPARE(v.self.model, std::string("rescnn"));
        QCOMPARE(v.self.modelLayers, 3);
        QCOMPARE(v.self.modelParameters, int64_t(2'100'000));
        QCOMPARE(v.self.layers, (std::vector<std::string>{"Linear(128->10)"}));
        QCOMPARE(v.self.stageParameters, int64_t(1290));
        QCOMPARE(v.self.stageMemoryBytes, uint64_t(88'000'000));
        const auto root = host::parseSwarmStatus(status, "a");
        QCOMPARE(root.self.layers, (std::vector<std::string>{"Conv2d(1->64, k3)", "ReLU"}));
        QCOMPARE(root.self.stageParameters, int64_t(640));
    }

    void leafOfTheSecondCluster()
    {
        const auto v = host::parseSwarmStatus(kStatus, "d");
        QCOMPARE(v.self.cluster, 1); // id 7 is the second cluster
        QCOMPARE(v.self.role, std::string("leaf"));
        QCOMPARE(v.self.layers.size(), size_t(4));
        QCOMPARE(v.clusterLoss, 0.7);
    }

    void peersAndLinks()
    {
        const auto v = host::parseSwarmStatus(kStatus, "a");
        QCOMPARE(v.peers.size(), size_t(4)); // emil waits outside every cluster
        QVERIFY(peer(v, "a")->self);
        QVERIFY(!peer(v, "b")->self);
        QCOMPARE(peer(v, "a")->samplesPerSecond, 410.5);
        QCOMPARE(peer(v, "a")->state, std::string("training"));
        QCOMPARE(peer(v, "c")->state, std::string("paused"));
        QCOMPARE(peer(v, "d")->state, std::string("lost"));
        QCOMPARE(peer(v, "d")->cluster, 1);
        QCOMPARE(peer(v, "d")->stage, 1);
        QCOMPARE(v.links.size(), size_t(3));
        QCOMPARE(v.links[2].kind, host::PeerLinkView::Kind::Ring);
        QCOMPARE(v.links[0].kind, host::PeerLinkView::Kind::Pipeline);
    }

    void aNodeNotYetPlaced()
    {
        const auto v = host::parseSwarmStatus(kStatus, "e");
        QCOMPARE(v.self.cluster, -1);
        QVERIFY(v.self.role.empty());
        QVERIFY(peer(v, "e") && peer(v, "e")->self); // it still sees itself
        // Whether peers can dial it is known before it is placed.
        QCOMPARE(v.self.reachability, std::string("unreachable"));
        QCOMPARE(v.self.reachabilityNote, std::string("peers cannot dial it at 192.0.2.5:4100"));
    }

    void refusesWhatIsNotTheStatus()
    {
        QVERIFY_THROWS_EXCEPTION(Error, host::parseSwarmStatus("not json", "a"));
        QVERIFY_THROWS_EXCEPTION(Error, host::parseSwarmStatus("{\"nodes\": []}", "a"));
    }

    // The swarm read from a live coordinator's status API; a wrong pin is reported once.
    void feedReadsALiveCoordinator()
    {
        QTemporaryDir dir;
        auto settings = test::testSettings(dir.filePath(QStringLiteral("coord")).toStdString());
        settings.run.totalSteps = 4321;
        coord::Coordinator coordinator(settings);
        std::filesystem::create_directories(dir.filePath(QStringLiteral("node")).toStdString());

        std::mutex mutex;
        std::optional<host::SwarmStatusView> swarm;
        std::vector<std::string> problems;
        host::SwarmStatusFeed::Callbacks cb;
        cb.swarm = [&](const host::SwarmStatusView &v) {
            std::lock_guard lock(mutex);
            swarm = v;
        };
        cb.problem = [&](const std::string &p) {
            std::lock_guard lock(mutex);
            problems.push_back(p);
        };
        host::SwarmStatusFeedSettings s;
        s.statusHost = "127.0.0.1";
        s.statusPort = coordinator.statusPort();
        s.pin = coordinator.coordinatorAddress().sha256;
        s.selfId = std::string(64, 'a'); // not registered: not placed
        s.interval = std::chrono::milliseconds(50);
        {
            host::SwarmStatusFeed feed(s, cb);
            QVERIFY(test::eventually([&] {
                std::lock_guard lock(mutex);
                return swarm.has_value();
            }));
        }
        QCOMPARE(swarm->totalSteps, int64_t(4321));
        QCOMPARE(swarm->self.cluster, -1);
        QVERIFY(problems.empty());

        swarm.reset();
        s.pin = std::string(64, '0');
        {
            host::SwarmStatusFeed feed(s, cb);
            QVERIFY(test::eventually([&] {
                std::lock_guard lock(mutex);
                return !problems.empty();
            }));
            std::this_thread::sleep_for(std::chrono::milliseconds(300)); // several more failed reads
        }
        QCOMPARE(problems.size(), size_t(1));
        QVERIFY2(problems[0].find("the peer graph shows this node only") != std::string::npos, problems[0].c_str());
        QVERIFY(!swarm);
    }

    // A coordinator that accepts the connection and then says nothing (asleep, or
    // hostile) costs the reader its timeout, not its thread.
    void aSilentCoordinatorTimesOut()
    {
        boost::asio::io_context ioc;
        boost::asio::ip::tcp::acceptor acceptor(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
        const uint16_t port = acceptor.local_endpoint().port();
        boost::asio::ip::tcp::socket held(ioc);
        std::thread silent([&] { acceptor.accept(held); }); // accepts, then never writes
        const auto started = std::chrono::steady_clock::now();
        std::string error;
        try {
            host::fetchSwarmStatus("127.0.0.1", port, std::string(64, '0'), std::chrono::milliseconds(300));
        } catch (const Error &e) {
            error = e.what();
        }
        const auto took = std::chrono::steady_clock::now() - started;
        silent.join();
        QVERIFY2(error.find("cannot read the coordinator's status at 127.0.0.1:") == 0, error.c_str());
        QVERIFY2(took < std::chrono::seconds(5), "a silent coordinator held the reader past its deadline");
    }
};

QTEST_APPLESS_MAIN(TestSwarmStatus)
#include "tst_swarm_status.moc"
