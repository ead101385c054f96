// SPDX-License-Identifier: GPL-3.0-or-later
// holdStormGrowth: during a registration storm, placed nodes keep the rings, shard and
// cluster count they were told, whatever cuts came since; a ring that loses, halts or
// re-cuts a member closes without it; newcomers and re-cut nodes form the fresh rings
// among themselves; and every ring any node is told of stays whole.
#include <QtTest>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "engine/coord/storm_hold.h"
#include "tests/engine/coord/ring_check.h"

using namespace rookery;
using namespace rookery::coord;

namespace {

using Assignments = std::map<std::string, Assignment>;

std::string addressOf(const std::string &id) { return id + ".example:7000"; }

// Seats `ids`, in that order, in one ring over layers [0, layers).
void seatRing(Assignments &all, const std::vector<std::string> &ids, size_t layers = 4)
{
    const uint64_t ringId = layers; // (0 << 32) | layers
    for (size_t k = 0; k < ids.size(); ++k)
        all.at(ids[k]).rings = {ringSeat(ringId, 0, layers, ids.size(), k, [&](size_t m) {
            return PeerRef{ids[m], addressOf(ids[m])};
        })};
}

// A swarm of one-stage clusters: member k of `ids` is cluster k, holding layers
// [0, layers), all in one ring in that order, reading shard k of ids.size().
Assignments swarmOf(const std::vector<std::string> &ids, size_t layers = 4)
{
    Assignments out;
    for (size_t k = 0; k < ids.size(); ++k) {
        Assignment a;
        a.state = AssignmentState::Training;
        a.cluster = int(k);
        a.clusterCount = int(ids.size());
        a.stage = 0;
        a.stages = 1;
        a.firstLayer = 0;
        a.lastLayer = layers;
        a.shard = {int(k), int(ids.size())};
        out.emplace(ids[k], a);
    }
    seatRing(out, ids, layers);
    return out;
}

std::map<std::string, std::string> addressesOf(const Assignments &a)
{
    std::map<std::string, std::string> out;
    for (const auto &[id, x] : a)
        out.emplace(id, addressOf(id));
    return out;
}

} // namespace

class TestStormHold : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void placedNodesKeepWhatTheyHeardAndNewcomersRingAmongThemselves()
    {
        const Assignments published = swarmOf({"a", "b", "c"});
        Assignments fresh = swarmOf({"a", "b", "c", "d", "e"});
        QVERIFY(test::wholeRings(published).empty());
        const size_t differs = holdStormGrowth(fresh, published, addressesOf(fresh));
        QCOMPARE(differs, size_t(5)); // a, b, c as published; d and e in a ring of their own
        for (const char *id : {"a", "b", "c"})
            QVERIFY2(fresh.at(id) == published.at(id), id);
        for (const char *id : {"d", "e"}) {
            const Assignment &n = fresh.at(id);
            QCOMPARE(n.rings.size(), size_t(1));
            QCOMPARE(n.rings[0].size, size_t(2));
            QCOMPARE(n.rings[0].ringId, published.at("a").rings[0].ringId);
            QCOMPARE(n.shard.count, 5); // a newcomer reads its fresh shard
        }
        QCOMPARE(fresh.at("d").rings[0].next.nodeId, std::string("e"));
        const std::string why = test::wholeRings(fresh);
        QVERIFY2(why.empty(), why.c_str());

        // The next round of the same storm: both groups keep their rings, and the one
        // newcomer sits alone.
        const Assignments told = fresh;
        Assignments later = swarmOf({"a", "b", "c", "d", "e", "f"});
        QCOMPARE(holdStormGrowth(later, told, addressesOf(later)), size_t(6));
        for (const char *id : {"a", "b", "c", "d", "e"})
            QVERIFY2(later.at(id) == told.at(id), id);
        QVERIFY(later.at("f").rings[0].alone());
        QVERIFY(test::wholeRings(later).empty());
    }

    void aNewCutSplitsNoRingThatWasTold()
    {
        // a and b hold layers [0,4) in one ring. A newcomer's cluster cuts at 2, so the
        // fresh plan averages [0,2) and [2,4) apart: a and b keep their [0,4) ring, and
        // the newcomers c (layers [0,2)) and d ([2,4)) each sit in a fresh one.
        const Assignments published = swarmOf({"a", "b"}, 4);
        Assignments fresh = published;
        for (auto &[id, a] : fresh)
            a.clusterCount = 3;
        Assignment c, d;
        c.state = d.state = AssignmentState::Training;
        c.cluster = d.cluster = 2;
        c.clusterCount = d.clusterCount = 3;
        c.stages = d.stages = 2;
        c.lastLayer = 2;
        d.stage = 1;
        d.firstLayer = 2;
        d.lastLayer = 4;
        c.next = PeerRef{"d", addressOf("d")};
        d.previous = PeerRef{"c", addressOf("c")};
        fresh.emplace("c", c);
        fresh.emplace("d", d);
        const auto split = [&](const std::vector<std::string> &low, const std::vector<std::string> &high) {
            for (auto &[id, a] : fresh)
                a.rings.clear();
            for (const auto &[ids, first, last] :
                 {std::tuple{low, size_t(0), size_t(2)}, std::tuple{high, size_t(2), size_t(4)}})
                for (size_t k = 0; k < ids.size(); ++k)
                    fresh.at(ids[k]).rings.push_back(
                        ringSeat((uint64_t(first) << 32) | last, first, last, ids.size(), k, [&](size_t m) {
                            return PeerRef{ids[m], addressOf(ids[m])};
                        }));
        };
        split({"a", "b", "c"}, {"a", "b", "d"});
        holdStormGrowth(fresh, published, addressesOf(fresh));
        QVERIFY(fresh.at("a") == published.at("a"));
        QVERIFY(fresh.at("b") == published.at("b"));
        QCOMPARE(fresh.at("c").rings.size(), size_t(1));
        QVERIFY(fresh.at("c").rings[0].alone());
        QCOMPARE(fresh.at("c").rings[0].lastLayer, size_t(2));
        QVERIFY(fresh.at("d").rings[0].alone());
        QCOMPARE(fresh.at("d").rings[0].firstLayer, size_t(2));
        const std::string why = test::wholeRings(fresh);
        QVERIFY2(why.empty(), why.c_str());
    }

    void aRingThatLosesAMemberClosesWithoutIt()
    {
        const Assignments published = swarmOf({"a", "b", "c", "e"});
        Assignments fresh = swarmOf({"a", "b", "c", "e", "d"}); // d is cluster 4
        fresh.erase("b");                                       // b left, d came
        seatRing(fresh, {"a", "c", "d", "e"});
        holdStormGrowth(fresh, published, addressesOf(fresh));
        // a, c and e close the ring in their published order; d sits alone.
        QCOMPARE(fresh.at("a").rings[0].size, size_t(3));
        QCOMPARE(fresh.at("a").rings[0].next.nodeId, std::string("c"));
        QCOMPARE(fresh.at("c").rings[0].next.nodeId, std::string("e"));
        QCOMPARE(fresh.at("e").rings[0].next.nodeId, std::string("a"));
        QCOMPARE(fresh.at("e").rings[0].rank, size_t(2));
        QVERIFY(fresh.at("d").rings[0].alone());
        QCOMPARE(fresh.at("a").shard.count, 4); // a's stage is the same: its shard is held
        const std::string why = test::wholeRings(fresh);
        QVERIFY2(why.empty(), why.c_str());
    }

    void aHaltedOrReCutMemberReleasesItsRing()
    {
        const Assignments published = swarmOf({"a", "b", "c"});
        // b's cluster is halted (skipAway): it sits alone, a and c average without it,
        // and the newcomer d sits alone too (its fresh ring's others are kept).
        Assignments halted = swarmOf({"a", "b", "c", "d"});
        seatRing(halted, {"a", "c", "d"});
        halted.at("b").rings = {RingRef{4, 0, 4, 0, 1, {}, {}}};
        holdStormGrowth(halted, published, addressesOf(halted));
        QVERIFY(halted.at("b").rings[0].alone());
        QVERIFY(halted.at("d").rings[0].alone());
        QCOMPARE(halted.at("a").rings[0].size, size_t(2));
        QCOMPARE(halted.at("a").rings[0].next.nodeId, std::string("c"));
        QVERIFY(test::wholeRings(halted).empty());

        // c's stage changes (its pipeline neighbour is another node now): a new stage,
        // so a and b close their ring without it, c reads its fresh shard, and c rings
        // with the newcomer d.
        Assignments recut = swarmOf({"a", "b", "c", "d"});
        recut.at("c").next = PeerRef{"x", addressOf("x")};
        holdStormGrowth(recut, published, addressesOf(recut));
        QCOMPARE(recut.at("a").rings[0].size, size_t(2));
        QCOMPARE(recut.at("a").rings[0].next.nodeId, std::string("b"));
        QCOMPARE(recut.at("c").rings[0].size, size_t(2));
        QCOMPARE(recut.at("c").rings[0].next.nodeId, std::string("d"));
        QCOMPARE(recut.at("c").shard.count, 4);
        QCOMPARE(recut.at("a").shard.count, 3);
        QVERIFY(test::wholeRings(recut).empty());
    }

    void aNewCutFormsItsRingAtOnce()
    {
        const Assignments published = swarmOf({"a", "b"}, 4);
        Assignments fresh = swarmOf({"a", "b"}, 4);
        for (auto &[id, a] : swarmOf({"c", "d"}, 6)) { // layers [0,6): a ring nobody was told of
            a.cluster += 2;
            fresh.emplace(id, a);
        }
        holdStormGrowth(fresh, published, addressesOf(fresh));
        QCOMPARE(fresh.at("c").rings[0].size, size_t(2));
        QCOMPARE(fresh.at("c").rings[0].next.nodeId, std::string("d"));
        QVERIFY(fresh.at("a") == published.at("a"));
        QVERIFY(test::wholeRings(fresh).empty());
    }

    void aKeptSeatNamesTheNeighbourWhereItIsNow()
    {
        const Assignments published = swarmOf({"a", "b", "c"});
        Assignments fresh = swarmOf({"a", "b", "c", "d"});
        auto addresses = addressesOf(fresh);
        addresses["b"] = "b.moved:7001";
        holdStormGrowth(fresh, published, addresses);
        QCOMPARE(fresh.at("a").rings[0].next.nodeId, std::string("b"));
        QCOMPARE(fresh.at("a").rings[0].next.address, std::string("b.moved:7001"));
        QCOMPARE(fresh.at("c").rings[0].previous.address, std::string("b.moved:7001"));
        QCOMPARE(fresh.at("a").rings[0].size, size_t(3));
    }

    void aRingOfOneStaysOneUntilTheStormEnds()
    {
        // One cluster trained alone; b was waiting. The storm's clusters join a's ring
        // only once it is over: until then a sits alone, and b and c ring together.
        Assignments published = swarmOf({"a"});
        Assignment waiting;
        published.emplace("b", waiting);
        Assignments fresh = swarmOf({"a", "b", "c"});
        holdStormGrowth(fresh, published, addressesOf(fresh));
        QVERIFY(fresh.at("a").rings[0].alone());
        QVERIFY(fresh.at("a") == published.at("a"));
        QCOMPARE(fresh.at("b").rings[0].size, size_t(2));
        QCOMPARE(fresh.at("b").shard.count, 3); // b's stage is new: its fresh shard
        QVERIFY(test::wholeRings(fresh).empty());
    }

    void aTornRecordLeavesNobodyWaiting()
    {
        // A published ring whose seats do not close (b names c, c was never told of b):
        // its members keep their stage, and sit alone in it rather than wait for a peer.
        Assignments published = swarmOf({"a", "b", "c"});
        published.at("c").rings[0].previous = PeerRef{"a", addressOf("a")};
        published.at("c").rings[0].size = 2;
        Assignments fresh = swarmOf({"a", "b", "c"});
        holdStormGrowth(fresh, published, addressesOf(fresh));
        const std::string why = test::wholeRings(fresh);
        QVERIFY2(why.empty(), why.c_str());
    }
};

QTEST_GUILESS_MAIN(TestStormHold)
#include "tst_storm_hold.moc"
