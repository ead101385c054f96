// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline runtime over real TLS WebSocket links on loopback: the network transport
// plugs in without changes to the runtime and computes exactly what the in-process
// pipeline computes; a lost peer stops a run instead of hanging it; rings average over
// the same links.
#include <QtTest>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include "engine/data/image_dataset.h"
#include "engine/model/model_zoo.h"
#include "engine/net/certificate_authority.h"
#include "engine/net/identity.h"
#include "engine/participant/net_ring_links.h"
#include "engine/participant/net_stage_transport.h"
#include "engine/participant/peer_complaints.h"
#include "engine/participant/peer_mesh.h"
#include "engine/participant/weights_relay.h"
#include "engine/train/pipeline.h"
#include "engine/train/stage_runtime.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

// One simulated node: an identity with a CA-issued certificate and its peer mesh, whose
// messages go to whichever transports and rings are attached.
struct TestNode
{
    net::Identity identity = net::Identity::generate();
    std::unique_ptr<participant::PeerMesh> mesh;
    std::unique_ptr<participant::NetStageTransport> transport;
    std::vector<std::unique_ptr<participant::NetRingLinks>> rings;
    std::unique_ptr<participant::WeightsRelay> relay;
    std::mutex mutex;
    std::atomic<int> ringChunks{0}; // ring chunks that reached this node's rings

    TestNode(net::NetContext &net, const net::CertificateAuthority &ca)
    {
        participant::PeerMesh::Config c;
        c.nodeId = identity.nodeId();
        c.credentials = {ca.issue(identity.publicKeyPem()), identity.privateKeyPem(), ca.certificatePem()};
        participant::PeerMesh::Events e;
        e.message = [this](const std::string &peer, net::Message &&m) {
            std::lock_guard lock(mutex);
            if (relay &&
                (std::holds_alternative<net::WeightsRequest>(m) || std::holds_alternative<net::WeightsReply>(m))) {
                relay->deliver(peer, std::move(m));
            } else if (auto *chunk = std::get_if<net::RingChunk>(&m)) {
                for (auto &r : rings)
                    r->deliver(peer, net::RingChunk(*chunk));
                ++ringChunks;
            } else if (transport) {
                transport->deliver(peer, std::move(m));
            }
        };
        e.link = [this](const std::string &peer, bool up) {
            std::lock_guard lock(mutex);
            if (transport)
                transport->linkChanged(peer, up);
        };
        e.writable = [this](const std::string &peer) {
            std::lock_guard lock(mutex);
            if (transport)
                transport->writable(peer);
        };
        mesh = std::make_unique<participant::PeerMesh>(net, c, e);
    }
    // The mesh goes first: its events reach the transport, rings and relay below.
    ~TestNode() { mesh.reset(); }
    participant::PeerAddress address() const
    {
        return {identity.nodeId(), "127.0.0.1:" + std::to_string(mesh->port())};
    }
};

train::StageConfig stageConfig(int stage, size_t first, size_t last)
{
    train::StageConfig c;
    c.model = model::mlpSpec();
    c.firstLayer = first;
    c.lastLayer = last;
    c.stage = stage;
    c.stages = 2;
    c.optimizer.learningRate = 0.05;
    c.microbatchSize = 64;
    c.mode = train::PipelineMode::Synchronous;
    c.seed = 3;
    return c;
}

// Links `root` and `leaf` as the two stages of one pipeline; true once both see the
// link up.
bool linkAsRootAndLeaf(TestNode &root, TestNode &leaf)
{
    root.mesh->setPeers({leaf.address()});
    leaf.mesh->setPeers({root.address()});
    {
        std::scoped_lock lock(root.mutex, leaf.mutex);
        root.transport = std::make_unique<participant::NetStageTransport>(*root.mesh, 0, "", leaf.identity.nodeId());
        leaf.transport = std::make_unique<participant::NetStageTransport>(*leaf.mesh, 1, root.identity.nodeId(), "");
    }
    return test::waitFor([&] { return root.transport->neighboursUp() && leaf.transport->neighboursUp(); },
                         std::chrono::seconds(10));
}

// Links a and b to each other and gives each the links of ring `ringId` with the other
// as both neighbours; `aKnowsB` false leaves a's ring one of its own (no neighbours).
bool pairInARing(TestNode &a, TestNode &b, uint64_t ringId, bool aKnowsB = true)
{
    const std::string aId = a.identity.nodeId(), bId = b.identity.nodeId();
    a.mesh->setPeers({b.address()});
    b.mesh->setPeers({a.address()});
    if (!test::waitFor([&] { return a.mesh->isUp(bId) && b.mesh->isUp(aId); }, std::chrono::seconds(10)))
        return false;
    std::scoped_lock lock(a.mutex, b.mutex);
    a.rings.push_back(
        std::make_unique<participant::NetRingLinks>(*a.mesh, ringId, aKnowsB ? bId : "", aKnowsB ? bId : ""));
    b.rings.push_back(std::make_unique<participant::NetRingLinks>(*b.mesh, ringId, aId, aId));
    return true;
}

} // namespace

class TestNetPipeline : public QObject
{
    Q_OBJECT

    std::shared_ptr<data::ImageDataset> m_train;
    net::CertificateAuthority m_ca = net::CertificateAuthority::create("test swarm");

private Q_SLOTS:
    void initTestCase()
    {
        m_train = std::make_shared<data::ImageDataset>(
            data::headOf(data::loadFashionMnist(test::fashionMnistDir(), data::Split::Train), 4096));
    }

    // Who dials: the node that can be dialled is; when both can, the smaller id dials.
    void theNodeBehindNatDialsOut()
    {
        const participant::PeerAddress reachable{"b", "127.0.0.1:1"}, behindNat{"b", "127.0.0.1:1", true};
        QVERIFY(participant::dialsPeer("a", false, reachable));
        QVERIFY(!participant::dialsPeer("c", false, reachable)); // b, the smaller, dials c
        QVERIFY(participant::dialsPeer("c", true, reachable));   // c cannot be dialled: it dials
        QVERIFY(!participant::dialsPeer("a", false, behindNat)); // b dials a
        QVERIFY(!participant::dialsPeer("a", true, behindNat));  // neither can: no one dials

        // Over real links: the larger id, behind NAT, dials the smaller, which would have
        // dialled it otherwise; the link opens.
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        TestNode &small = a.identity.nodeId() < b.identity.nodeId() ? a : b;
        TestNode &large = &small == &a ? b : a;
        auto largeAsSeen = large.address();
        largeAsSeen.unreachable = true;
        largeAsSeen.address = "127.0.0.1:9"; // nothing listens there: only its own dial can link them
        small.mesh->setPeers({largeAsSeen}, false);
        large.mesh->setPeers({small.address()}, true);
        // Each side sees the link open on its own thread, in either order: wait for both.
        QVERIFY(test::waitFor(
            [&] { return small.mesh->isUp(large.identity.nodeId()) && large.mesh->isUp(small.identity.nodeId()); },
            10s));
    }

    // Cut after the first linear layer, and after the Flatten alone: a root that trains
    // nothing, whose leaf sends back empty gradients (the planner makes such cuts).
    void matchesTheInProcessPipeline_data()
    {
        QTest::addColumn<int>("cut");
        QTest::newRow("[0,2) [2,6)") << 2;
        QTest::newRow("[0,1) [1,6)") << 1;
    }

    void matchesTheInProcessPipeline()
    {
        QFETCH(int, cut);
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        QVERIFY(linkAsRootAndLeaf(a, b));

        const int64_t microbatches = 40;
        train::StageRuntime root(stageConfig(0, 0, size_t(cut)), *a.transport, train::openGate(), m_train);
        train::StageRuntime leaf(stageConfig(1, size_t(cut), 6), *b.transport);
        a.transport->beginRun();
        b.transport->beginRun();
        train::StageRunResult leafResult;
        std::thread t([&] { leafResult = leaf.run(microbatches); });
        const auto rootResult = root.run(microbatches);
        t.join();
        QCOMPARE(int(rootResult.stop.kind), int(train::StopKind::Finished));
        QCOMPARE(int(leafResult.stop.kind), int(train::StopKind::Finished));
        QCOMPARE(rootResult.metrics.backwards, microbatches);

        train::PipelineConfig pc;
        pc.model = model::mlpSpec();
        pc.cuts = {size_t(cut)};
        pc.optimizer.learningRate = 0.05;
        pc.mode = train::PipelineMode::Synchronous;
        pc.seed = 3;
        train::Pipeline local(pc, m_train);
        local.run(microbatches);
        auto expected = local.parameters();
        auto got = root.parameters();
        for (auto &p : leaf.parameters())
            got.push_back(p);
        QCOMPARE(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i)
            QVERIFY2(got[i] == expected[i], got[i].name.c_str()); // the same bytes: the network only moves them
    }

    void lostPeerStopsTheRun()
    {
        net::NetContext net;
        TestNode a(net, m_ca);
        auto b = std::make_unique<TestNode>(net, m_ca);
        a.mesh->setPeers({b->address()});
        b->mesh->setPeers({a.address()});
        {
            std::scoped_lock lock(a.mutex, b->mutex);
            a.transport = std::make_unique<participant::NetStageTransport>(*a.mesh, 0, "", b->identity.nodeId());
            b->transport = std::make_unique<participant::NetStageTransport>(*b->mesh, 1, a.identity.nodeId(), "");
        }
        QVERIFY(test::waitFor([&] { return a.transport->neighboursUp(); }, 10s));
        train::StageRuntime root(stageConfig(0, 0, 2), *a.transport, train::openGate(), m_train);
        auto leafRuntime = std::make_unique<train::StageRuntime>(stageConfig(1, 2, 6), *b->transport);
        a.transport->beginRun();
        b->transport->beginRun();
        std::thread t([&] { leafRuntime->run(1'000'000); });
        std::thread killer([&] {
            std::this_thread::sleep_for(300ms);
            b->transport->abort({train::StopKind::Cancelled, 1, "test kills the leaf"});
            t.join();
            std::unique_ptr<participant::PeerMesh> gone;
            {
                std::lock_guard lock(b->mutex);
                gone = std::move(b->mesh);
            }
            gone.reset(); // the peer vanishes (outside the lock its event handlers take)
        });
        const auto start = std::chrono::steady_clock::now();
        const auto result = root.run(1'000'000);
        killer.join();
        QVERIFY(std::chrono::steady_clock::now() - start < 20s);
        QCOMPARE(int(result.stop.kind), int(train::StopKind::Cancelled));
        QVERIFY(result.metrics.backwards > 0);
    }

    // The root's window waits on gradients that will not come (the next stage dropped
    // its microbatches, or lies): after the stall timeout with the link up, the root
    // stops its run and tells the next stage, so that the pipeline restarts.
    void aRootStarvedOfGradientsRestartsThePipeline()
    {
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        QVERIFY(linkAsRootAndLeaf(a, b));
        a.transport->setStallTimeout(1s);
        train::StageRuntime root(stageConfig(0, 0, 2), *a.transport, train::openGate(), m_train);
        a.transport->beginRun();
        b.transport->beginRun(); // its stage never runs: nothing comes back
        const auto start = std::chrono::steady_clock::now();
        const auto result = root.run(1'000'000);
        const auto took = std::chrono::steady_clock::now() - start;
        QCOMPARE(int(result.stop.kind), int(train::StopKind::Cancelled));
        QVERIFY2(result.stop.reason.find("nothing from the next stage for 1 s") != std::string::npos,
                 result.stop.reason.c_str());
        QVERIFY(took >= 1s && took < 10s);
        QVERIFY(result.metrics.forwards > 0);
        QCOMPARE(result.metrics.backwards, int64_t(0));
        // The next stage heard of it.
        std::optional<train::StopMessage> stop;
        QVERIFY(test::waitFor(
            [&] {
                if (auto m = b.transport->poll()) // a stop stays until the next run begins
                    if (auto *s = std::get_if<train::StopMessage>(&*m))
                        stop = *s;
                return stop.has_value();
            },
            10s));
        QCOMPARE(int(stop->kind), int(train::StopKind::Cancelled));
    }

    // What a neighbour may say is checked, not believed: a "finished" long before the
    // run's end, or one coming up the pipeline, and more microbatches than any window
    // holds, each stop the run here (nothing ends for good) and count against the sender;
    // a neighbour's "failed" stops the run as a cancel, not as this node's failure.
    void aNeighbourCannotEndFloodOrFailTheRun()
    {
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        a.mesh->setPeers({b.address()});
        b.mesh->setPeers({a.address()});
        auto complaints = std::make_shared<participant::PeerComplaints>();
        {
            std::scoped_lock lock(a.mutex, b.mutex);
            a.transport =
                std::make_unique<participant::NetStageTransport>(*a.mesh, 0, "", b.identity.nodeId(), complaints);
            b.transport =
                std::make_unique<participant::NetStageTransport>(*b.mesh, 1, a.identity.nodeId(), "", complaints);
            b.transport->setFinishCheck([](int64_t rootStep) {
                return rootStep >= 990 ? std::string() : "the root is at step " + std::to_string(rootStep) + " of 1000";
            });
        }
        QVERIFY(test::waitFor([&] { return a.transport->neighboursUp() && b.transport->neighboursUp(); }, 10s));
        const auto stopOf = [](participant::NetStageTransport &t) -> std::optional<train::StopMessage> {
            const auto deadline = std::chrono::steady_clock::now() + 10s;
            while (std::chrono::steady_clock::now() < deadline) {
                if (auto m = t.poll())
                    if (auto *stop = std::get_if<train::StopMessage>(&*m))
                        return *stop;
                std::this_thread::sleep_for(5ms);
            }
            return std::nullopt;
        };
        const uint64_t generation1 = uint64_t(1) << participant::NetStageTransport::kGenerationShift;
        const auto restart = [&] {
            a.transport->beginRun(); // the root opens generation n + 1
            b.transport->beginRun();
        };
        const auto complaintsAgainst = [&](const std::string &id) {
            const auto all = complaints->snapshot();
            const auto it = all.find(id);
            return it == all.end() ? int64_t(0) : it->second;
        };

        // A "finished" that says the root is at step 3 of 1,000.
        restart();
        QCOMPARE(int(a.mesh->send(b.identity.nodeId(), net::StageError{0, generation1 + 3, "finished"})),
                 int(net::SendResult::Queued));
        auto stop = stopOf(*b.transport);
        QVERIFY(stop);
        QCOMPARE(int(stop->kind), int(train::StopKind::Cancelled));
        QVERIFY2(stop->reason.find("refused") != std::string::npos, stop->reason.c_str());
        QCOMPARE(complaintsAgainst(a.identity.nodeId()), int64_t(1));

        // At step 1,000 it is believed: the run finishes.
        restart();
        QCOMPARE(int(a.mesh->send(b.identity.nodeId(), net::StageError{0, 2 * generation1 + 1000, "finished"})),
                 int(net::SendResult::Queued));
        stop = stopOf(*b.transport);
        QVERIFY(stop);
        QCOMPARE(int(stop->kind), int(train::StopKind::Finished));
        QCOMPARE(complaintsAgainst(a.identity.nodeId()), int64_t(1));

        // A "finished" up the pipeline is never allowed.
        restart();
        QCOMPARE(int(b.mesh->send(a.identity.nodeId(), net::StageError{1, 3 * generation1, "finished"})),
                 int(net::SendResult::Queued));
        stop = stopOf(*a.transport);
        QVERIFY(stop);
        QCOMPARE(int(stop->kind), int(train::StopKind::Cancelled));
        QCOMPARE(complaintsAgainst(b.identity.nodeId()), int64_t(1));

        // A neighbour's failure: a cancel here, not a failure of this node.
        restart();
        QCOMPARE(int(a.mesh->send(b.identity.nodeId(), net::StageError{0, 4 * generation1, "failed: out of memory"})),
                 int(net::SendResult::Queued));
        stop = stopOf(*b.transport);
        QVERIFY(stop);
        QCOMPARE(int(stop->kind), int(train::StopKind::Cancelled));
        QVERIFY2(stop->reason.find("stage 0 failed: out of memory") != std::string::npos, stop->reason.c_str());
        QCOMPARE(complaintsAgainst(a.identity.nodeId()), int64_t(1));
        // ... and answered: a sender that said it failed yet trains on stops here too.
        stop = stopOf(*a.transport);
        QVERIFY(stop);
        QCOMPARE(int(stop->kind), int(train::StopKind::Cancelled));
        QVERIFY2(stop->reason.find("stopped on stage 0's failure") != std::string::npos, stop->reason.c_str());

        // A node gives up after its 4th failure: up to 4 of stage 0 stop runs here, a
        // 5th is forged. It is refused and counted, and the run goes on.
        const auto noStopOf = [](participant::NetStageTransport &t) {
            const auto deadline = std::chrono::steady_clock::now() + 500ms;
            while (std::chrono::steady_clock::now() < deadline) {
                if (auto m = t.poll())
                    if (std::holds_alternative<train::StopMessage>(*m))
                        return false;
                std::this_thread::sleep_for(5ms);
            }
            return true;
        };
        uint64_t generation = 4;
        for (int failure = 2; failure <= participant::NetStageTransport::kMaxNeighbourFailures; ++failure) {
            restart();
            ++generation;
            QCOMPARE(int(a.mesh->send(b.identity.nodeId(), net::StageError{0, generation * generation1, "failed: x"})),
                     int(net::SendResult::Queued));
            stop = stopOf(*b.transport);
            QVERIFY(stop);
            QCOMPARE(int(stop->kind), int(train::StopKind::Cancelled));
        }
        restart();
        ++generation;
        QCOMPARE(int(a.mesh->send(b.identity.nodeId(), net::StageError{0, generation * generation1, "failed: x"})),
                 int(net::SendResult::Queued));
        QVERIFY(test::waitFor([&] { return complaintsAgainst(a.identity.nodeId()) == 2; }, 10s));
        QVERIFY(noStopOf(*b.transport));
        // A stop must name a stage on the sender's side: the previous stage cannot speak
        // for this one or those after it. Ignored, not counted (a re-plan that swaps two
        // stages may briefly send one).
        QCOMPARE(int(a.mesh->send(b.identity.nodeId(), net::StageError{1, generation * generation1, "cancelled: x"})),
                 int(net::SendResult::Queued));
        QVERIFY(noStopOf(*b.transport));
        QCOMPARE(complaintsAgainst(a.identity.nodeId()), int64_t(2));

        // A flood: more microbatches than any window, none taken yet. The first
        // kMaxQueued wait; the next is refused.
        restart();
        ++generation;
        const auto activations = tensorBufferFromBytes(DType::Float32, {1, 4}, std::vector<uint8_t>(16, 0));
        const auto labels = tensorBufferFromBytes(DType::Int64, {1}, std::vector<uint8_t>(8, 0));
        for (size_t i = 0; i <= participant::NetStageTransport::kMaxQueued; ++i)
            QVERIFY(test::waitFor(
                [&] {
                    return a.mesh->send(b.identity.nodeId(),
                                        net::Activations{generation * generation1 + i, 0, activations, labels}) ==
                           net::SendResult::Queued;
                },
                5s));
        QVERIFY(test::waitFor([&] { return complaintsAgainst(a.identity.nodeId()) == 3; }, 10s));
        stop = stopOf(*b.transport);
        QVERIFY(stop);
        QCOMPARE(int(stop->kind), int(train::StopKind::Cancelled));
        QVERIFY2(stop->reason.find("refused") != std::string::npos, stop->reason.c_str());
    }

    // A run belongs to one generation. A stage that worked on generation n and then sees
    // n + 1 (the root restarted; its own new stage was handed both, as after a re-cut)
    // ends its run without telling the root, which has moved on; the next run starts with
    // the newer microbatches. A run that took nothing yet just follows the newer one.
    void aRunEndsWhenTheRootRestartsUnderIt()
    {
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        a.mesh->setPeers({b.address()});
        b.mesh->setPeers({a.address()});
        {
            std::scoped_lock lock(a.mutex, b.mutex);
            a.transport = std::make_unique<participant::NetStageTransport>(*a.mesh, 0, "", b.identity.nodeId());
            b.transport = std::make_unique<participant::NetStageTransport>(*b.mesh, 1, a.identity.nodeId(), "");
        }
        QVERIFY(test::waitFor([&] { return a.transport->neighboursUp() && b.transport->neighboursUp(); }, 10s));
        const uint64_t generation1 = uint64_t(1) << participant::NetStageTransport::kGenerationShift;
        const auto activations = tensorBufferFromBytes(DType::Float32, {1, 4}, std::vector<uint8_t>(16, 0));
        const auto labels = tensorBufferFromBytes(DType::Int64, {1}, std::vector<uint8_t>(8, 0));
        const auto sendActivations = [&](uint64_t wireId) {
            QCOMPARE(int(a.mesh->send(b.identity.nodeId(), net::Activations{wireId, 0, activations, labels})),
                     int(net::SendResult::Queued));
        };
        const auto next = [](participant::NetStageTransport &t) -> std::optional<train::StageMessage> {
            const auto deadline = std::chrono::steady_clock::now() + 10s;
            while (std::chrono::steady_clock::now() < deadline) {
                if (auto m = t.poll())
                    return m;
                std::this_thread::sleep_for(5ms);
            }
            return std::nullopt;
        };
        const auto microbatchOf = [](const std::optional<train::StageMessage> &m) {
            const auto *f = m ? std::get_if<train::ForwardMessage>(&*m) : nullptr;
            return f ? f->microbatch : int64_t(-1);
        };

        a.transport->beginRun();
        b.transport->beginRun();
        // Nothing taken yet: generation 2 replaces 1, and the run goes on with it.
        sendActivations(generation1 + 7);
        sendActivations(2 * generation1 + 0);
        std::this_thread::sleep_for(500ms); // both arrive (in order, on one link) before the stage looks
        QCOMPARE(microbatchOf(next(*b.transport)), int64_t(0));
        // Taken one of generation 2: generation 3 ends the run.
        sendActivations(3 * generation1 + 0);
        sendActivations(3 * generation1 + 1);
        const auto stop = next(*b.transport);
        QVERIFY(stop && std::holds_alternative<train::StopMessage>(*stop));
        QCOMPARE(int(std::get<train::StopMessage>(*stop).kind), int(train::StopKind::Cancelled));
        QVERIFY2(std::get<train::StopMessage>(*stop).reason.find("root restarted") != std::string::npos,
                 std::get<train::StopMessage>(*stop).reason.c_str());
        // The root is not told (it has moved on).
        std::this_thread::sleep_for(500ms);
        QVERIFY(!a.transport->poll());
        // The next run starts with generation 3's microbatches, in order.
        b.transport->beginRun();
        QCOMPARE(microbatchOf(next(*b.transport)), int64_t(0));
        QCOMPARE(microbatchOf(next(*b.transport)), int64_t(1));
    }

    // The coordinator's ban list reaches the mesh: the link to a banned peer closes and
    // stays closed, whichever end dials, while the assignment still names it; lifted,
    // the link comes back.
    void aBannedPeersLinksAreRefused()
    {
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        a.mesh->setPeers({b.address()});
        b.mesh->setPeers({a.address()});
        const std::string aId = a.identity.nodeId(), bId = b.identity.nodeId();
        QVERIFY(test::waitFor([&] { return a.mesh->isUp(bId) && b.mesh->isUp(aId); }, 10s));
        a.mesh->setBanned({bId});
        QVERIFY(test::waitFor([&] { return !a.mesh->isUp(bId) && !b.mesh->isUp(aId); }, 10s));
        std::this_thread::sleep_for(1500ms); // b (or a) dials again meanwhile
        QVERIFY(!a.mesh->isUp(bId));
        a.mesh->setBanned({});
        QVERIFY(test::waitFor([&] { return a.mesh->isUp(bId) && b.mesh->isUp(aId); }, 15s));
    }

    // Certificates expire (30 days; seconds here): an open link carries on past its
    // certificates' end, a new link with expired ones fails, and once both meshes have
    // renewed ones (setCredentials) the link comes back.
    void renewedCertificatesKeepPeersLinking()
    {
        net::NetContext net;
        const auto now = std::chrono::system_clock::now();
        const auto shortLived = [&](const net::Identity &id) -> net::TlsCredentials {
            return {m_ca.issue(id.publicKeyPem(), now - std::chrono::minutes(1), now + 3s), id.privateKeyPem(),
                    m_ca.certificatePem()};
        };
        TestNode a(net, m_ca), b(net, m_ca);
        a.mesh->setCredentials(shortLived(a.identity));
        b.mesh->setCredentials(shortLived(b.identity));
        const std::string aId = a.identity.nodeId(), bId = b.identity.nodeId();
        a.mesh->setPeers({b.address()});
        b.mesh->setPeers({a.address()});
        QVERIFY(test::waitFor([&] { return a.mesh->isUp(bId) && b.mesh->isUp(aId); }, 10s));
        std::this_thread::sleep_for(4s);                 // both certificates have expired
        QVERIFY(a.mesh->isUp(bId) && b.mesh->isUp(aId)); // the open link carries on
        // A new link, with the expired certificates, does not open.
        a.mesh->setPeers({});
        b.mesh->setPeers({});
        QVERIFY(test::waitFor([&] { return !a.mesh->isUp(bId) && !b.mesh->isUp(aId); }, 10s));
        a.mesh->setPeers({b.address()});
        b.mesh->setPeers({a.address()});
        std::this_thread::sleep_for(2s);
        QVERIFY(!a.mesh->isUp(bId));
        a.mesh->setPeers({});
        b.mesh->setPeers({});
        // Renewed (as nodes do at half their certificates' life), it does.
        a.mesh->setCredentials(
            {m_ca.issue(a.identity.publicKeyPem()), a.identity.privateKeyPem(), m_ca.certificatePem()});
        b.mesh->setCredentials(
            {m_ca.issue(b.identity.publicKeyPem()), b.identity.privateKeyPem(), m_ca.certificatePem()});
        a.mesh->setPeers({b.address()});
        b.mesh->setPeers({a.address()});
        QVERIFY(test::waitFor([&] { return a.mesh->isUp(bId) && b.mesh->isUp(aId); }, 15s));
    }

    void ringAveragesOverLinks()
    {
        net::NetContext net;
        std::vector<std::unique_ptr<TestNode>> nodes;
        for (int i = 0; i < 3; ++i)
            nodes.push_back(std::make_unique<TestNode>(net, m_ca));
        for (int i = 0; i < 3; ++i) {
            auto &me = *nodes[size_t(i)];
            const auto &next = *nodes[size_t((i + 1) % 3)];
            const auto &prev = *nodes[size_t((i + 2) % 3)];
            me.mesh->setPeers({next.address(), prev.address()});
            std::lock_guard lock(me.mutex);
            me.rings.push_back(std::make_unique<participant::NetRingLinks>(*me.mesh, 77, next.identity.nodeId(),
                                                                           prev.identity.nodeId()));
        }
        QVERIFY(test::waitFor(
            [&] {
                for (int i = 0; i < 3; ++i)
                    if (!nodes[size_t(i)]->mesh->isUp(nodes[size_t((i + 1) % 3)]->identity.nodeId()))
                        return false;
                return true;
            },
            10s));
        // Close to each other, as ring members are (far-apart values are refused).
        std::vector<std::vector<float>> values(3, std::vector<float>(1000));
        for (int r = 0; r < 3; ++r)
            for (size_t i = 0; i < 1000; ++i)
                values[size_t(r)][i] = float(1000 + int(i) + 2 * r);
        std::vector<swarm::RingResult> results(3);
        std::vector<std::thread> threads;
        for (int r = 0; r < 3; ++r)
            threads.emplace_back([&, r] {
                results[size_t(r)] =
                    swarm::ringAllReduceAverage(values[size_t(r)], r, 3, 1, *nodes[size_t(r)]->rings[0], 5s);
            });
        for (auto &t : threads)
            t.join();
        for (int r = 0; r < 3; ++r) {
            QVERIFY2(results[size_t(r)].complete, results[size_t(r)].error.c_str());
            for (size_t i = 0; i < 1000; i += 97)
                QCOMPARE(values[size_t(r)][i], float(1002 + int(i))); // the mean of +0, +2 and +4
        }
    }

    // After a re-plan the coordinator's news reaches ring members at different times: b
    // already averages with a, and sends it round 5's first chunk, while a still holds
    // the ring alone. a keeps that chunk aside and queues it once it takes the change;
    // a change that keeps a's previous member keeps what it queued. Both members then
    // complete the round at once (dropped, the chunk left both waiting out the timeout).
    void aChunkFromAMemberNotYetKnownIsKeptForTheRound_data()
    {
        QTest::addColumn<bool>("knownBefore");
        QTest::newRow("a learns of b after b's chunk") << false;
        QTest::newRow("a's previous member stays b") << true;
    }
    void aChunkFromAMemberNotYetKnownIsKeptForTheRound()
    {
        QFETCH(bool, knownBefore);
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        const std::string bId = b.identity.nodeId();
        QVERIFY(pairInARing(a, b, 9, knownBefore));
        std::vector<float> va(1000), vb(1000);
        for (size_t i = 0; i < va.size(); ++i)
            va[i] = float(500 + int(i)), vb[i] = float(502 + int(i));
        const auto timeout = 10s;
        swarm::RingResult rb;
        std::thread bThread([&] { rb = swarm::ringAllReduceAverage(vb, 1, 2, 5, *b.rings[0], timeout); });
        const bool arrived = test::waitFor([&] { return a.ringChunks.load() >= 1; }, 10s);
        a.rings[0]->setNeighbours(bId, bId); // a takes the change (or the same neighbours again)
        const auto start = std::chrono::steady_clock::now();
        const auto ra = swarm::ringAllReduceAverage(va, 0, 2, 5, *a.rings[0], timeout);
        bThread.join();
        const auto took = std::chrono::steady_clock::now() - start;
        QVERIFY(arrived);
        QVERIFY2(ra.complete, ra.error.c_str());
        QVERIFY2(rb.complete, rb.error.c_str());
        QVERIFY(took < timeout / 2);
        for (size_t i = 0; i < va.size(); i += 97) {
            QCOMPARE(va[i], float(501 + int(i)));
            QCOMPARE(vb[i], float(501 + int(i)));
        }
    }

    // A member whose stage trained to the end answers a chunk of a later round (its
    // neighbour resumed behind it, so it numbers its rounds further on) with a notice:
    // the neighbour ends that round at once instead of waiting out its timeout. So does
    // a chunk that came between its last round and its finish.
    void aFinishedMemberEndsTheRoundsOfOneBehind_data()
    {
        QTest::addColumn<bool>("chunkFirst");
        QTest::newRow("the chunk after the finish") << false;
        QTest::newRow("the chunk before the finish") << true;
    }
    void aFinishedMemberEndsTheRoundsOfOneBehind()
    {
        QFETCH(bool, chunkFirst);
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        QVERIFY(pairInARing(a, b, 9));
        if (!chunkFirst)
            a.rings[0]->finish();
        std::vector<float> vb(1000, 3.f);
        swarm::RingResult result;
        std::thread bThread([&] { result = swarm::ringAllReduceAverage(vb, 1, 2, 122, *b.rings[0], 20s); });
        const bool arrived = test::waitFor([&] { return a.ringChunks.load() >= 1; }, 10s);
        if (chunkFirst)
            a.rings[0]->finish();
        bThread.join();
        QVERIFY(arrived);
        QVERIFY(!result.complete);
        QVERIFY(result.previousFinished); // so the stage stops asking that ring
        QVERIFY2(QString::fromStdString(result.error).contains(QStringLiteral("has trained to the end")),
                 result.error.c_str());
        QVERIFY2(result.seconds < 10, qPrintable(QString::number(result.seconds)));
        QCOMPARE(vb[0], 3.f);
    }

    // A node taking layers over asks a peer that has no snapshot yet (its own stage is
    // starting after the same re-plan): that peer drops the request, and the asker asks
    // again until it is answered, within its timeout.
    void aFetchFromAPeerNotReadyYetIsAskedAgain()
    {
        net::NetContext net;
        TestNode a(net, m_ca), b(net, m_ca);
        a.mesh->setPeers({b.address()});
        b.mesh->setPeers({a.address()});
        {
            std::scoped_lock lock(a.mutex, b.mutex);
            a.relay = std::make_unique<participant::WeightsRelay>(*a.mesh, 1, "", "");
            b.relay = std::make_unique<participant::WeightsRelay>(*b.mesh, 1, "", ""); // nothing published
        }
        QVERIFY(
            test::waitFor([&] { return a.mesh->isUp(b.identity.nodeId()) && b.mesh->isUp(a.identity.nodeId()); }, 10s));
        std::thread ready([&] {
            std::this_thread::sleep_for(1s);
            std::lock_guard lock(b.mutex);
            b.relay->publish({NamedTensor{"2.weight", DType::Float32, {1}, std::vector<uint8_t>(4, 9)}}, 5);
        });
        const auto start = std::chrono::steady_clock::now();
        const auto fetched = a.relay->fetch(b.identity.nodeId(), {"2.weight"}, 20s);
        const auto took = std::chrono::steady_clock::now() - start;
        ready.join();
        QVERIFY(fetched.has_value());
        QCOMPARE(int(fetched->front().data[0]), 9);
        QVERIFY(took < 1s + 2 * participant::WeightsRelay::kFetchResend);
    }

    void rootGathersThePipelinesWeights()
    {
        net::NetContext net;
        std::vector<std::unique_ptr<TestNode>> nodes;
        for (int i = 0; i < 4; ++i)
            nodes.push_back(std::make_unique<TestNode>(net, m_ca));
        auto id = [&](int i) { return i >= 0 && i < 3 ? nodes[size_t(i)]->identity.nodeId() : std::string(); };
        for (int i = 0; i < 3; ++i) {
            std::vector<participant::PeerAddress> peers;
            if (i > 0)
                peers.push_back(nodes[size_t(i - 1)]->address());
            if (i < 2)
                peers.push_back(nodes[size_t(i + 1)]->address());
            if (i == 2)
                peers.push_back(nodes[3]->address()); // node 3 takes over from stage 2
            nodes[size_t(i)]->mesh->setPeers(peers);
            std::lock_guard lock(nodes[size_t(i)]->mutex);
            nodes[size_t(i)]->relay =
                std::make_unique<participant::WeightsRelay>(*nodes[size_t(i)]->mesh, i, id(i - 1), id(i + 1));
            nodes[size_t(i)]->relay->publish(
                {NamedTensor{
                    std::to_string(i) + ".weight", DType::Float32, {1}, std::vector<uint8_t>(4, uint8_t(i + 1))}},
                7);
        }
        nodes[3]->mesh->setPeers({nodes[2]->address()});
        auto complaints = std::make_shared<participant::PeerComplaints>();
        {
            std::lock_guard lock(nodes[3]->mutex);
            nodes[3]->relay = std::make_unique<participant::WeightsRelay>(*nodes[3]->mesh, 2, "", "", complaints);
        }
        {
            std::lock_guard lock(nodes[0]->mutex); // the root judges what comes up, too
            nodes[0]->relay = std::make_unique<participant::WeightsRelay>(*nodes[0]->mesh, 0, "", id(1), complaints);
            nodes[0]->relay->publish({NamedTensor{"0.weight", DType::Float32, {1}, std::vector<uint8_t>(4, 1)}}, 7);
        }
        QVERIFY(test::waitFor(
            [&] {
                return nodes[0]->mesh->isUp(id(1)) && nodes[1]->mesh->isUp(id(0)) && nodes[1]->mesh->isUp(id(2)) &&
                       nodes[2]->mesh->isUp(id(1)) && nodes[2]->mesh->isUp(nodes[3]->identity.nodeId()) &&
                       nodes[3]->mesh->isUp(id(2));
            },
            10s));
        const auto all = nodes[0]->relay->gatherPipeline(3, 10s);
        QVERIFY(all.has_value());
        QCOMPARE(all->size(), size_t(3));
        for (int i = 0; i < 3; ++i) {
            QCOMPARE((*all)[size_t(i)].name, std::to_string(i) + ".weight");
            QCOMPARE(int((*all)[size_t(i)].data[0]), i + 1);
        }
        const auto fetched = nodes[3]->relay->fetch(id(2), {"2.weight"}, 10s);
        QVERIFY(fetched.has_value());
        QCOMPARE(int(fetched->front().data[0]), 3);
        QVERIFY(!nodes[3]->relay->fetch(id(2), {"9.weight"}, 2s)); // not held there
        // A peer whose cluster cuts elsewhere holds only some of the layers asked for: what
        // it holds comes back, in the order asked, and the caller asks another for the rest.
        const auto some = nodes[3]->relay->fetch(id(2), {"1.weight", "2.weight", "9.weight"}, 10s);
        QVERIFY(some.has_value());
        QCOMPARE(some->size(), size_t(1));
        QCOMPARE(some->front().name, std::string("2.weight"));
        QCOMPARE(int(some->front().data[0]), 3);

        // Forged weights are refused, and counted against the peer that sent them.
        const auto complaintsAgainst = [&](const std::string &who) {
            const auto counts = complaints->snapshot();
            return counts.count(who) ? counts.at(who) : int64_t(0);
        };
        const auto floats = [](std::vector<float> v) {
            std::vector<uint8_t> bytes(v.size() * sizeof(float));
            std::memcpy(bytes.data(), v.data(), bytes.size());
            return bytes;
        };
        nodes[2]->relay->publish({NamedTensor{"2.weight", DType::Float32, {2}, floats({1.0f, NAN})}}, 8);
        QVERIFY(!nodes[3]->relay->fetch(id(2), {"2.weight"}, 5s));
        QCOMPARE(complaintsAgainst(id(2)), int64_t(1));
        // Relayed up by stage 1, stage 2's NaN spoils the gather but blames no one: stage 1
        // only passed it on.
        QVERIFY(!nodes[0]->relay->gatherPipeline(3, 5s));
        QCOMPARE(complaintsAgainst(id(1)), int64_t(0));
        QCOMPARE(complaintsAgainst(id(2)), int64_t(1));
        nodes[2]->relay->publish({NamedTensor{"2.weight", DType::Float32, {1}, floats({0.5f})}}, 8);
        nodes[1]->relay->publish({NamedTensor{"1.weight", DType::Float32, {2}, floats({1e6f, -1e6f})}}, 8);
        QVERIFY(!nodes[0]->relay->gatherPipeline(3, 5s)); // stage 1's own: an RMS of 1e6
        QCOMPARE(complaintsAgainst(id(1)), int64_t(1));
        nodes[1]->relay->publish({NamedTensor{"1.weight", DType::Float32, {2}, floats({0.25f, -0.25f})}}, 8);
        const auto clean = nodes[0]->relay->gatherPipeline(3, 10s);
        QVERIFY(clean.has_value());
        QCOMPARE(clean->size(), size_t(3));
    }
};

QTEST_GUILESS_MAIN(TestNetPipeline)
#include "tst_net_pipeline.moc"
