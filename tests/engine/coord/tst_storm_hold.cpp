// SPDX-License-Identifier: GPL-3.0-or-later
// holdStormGrowth: during a registration storm, placed nodes keep the ring seats, shard
// and cluster count they were told, newcomers sit alone in those rings, and every ring
// any node is told of stays whole; a ring that loses, halts or re-cuts a member, and a
// ring with no placed member, get their fresh seats.
#include <QtTest>

#include <map>
#include <string>
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
    void placedNodesKeepWhatTheyHeardAndNewcomersSitAlone()
    {
        const Assignments published = swarmOf({"a", "b", "c"});
        Assignments fresh = swarmOf({"a", "b", "c", "d", "e"});
        QVERIFY(test::wholeRings(published).empty());
        const size_t differs = holdStormGrowth(fresh, published, addressesOf(fresh));
        QCOMPARE(differs, size_t(5)); // all but d and e are as published; d and e sit alone
        for (const char *id : {"a", "b", "c"})
            QVERIFY2(fresh.at(id) == published.at(id), id);
        for (const char *id : {"d", "e"}) {
            const Assignment &n = fresh.at(id);
            QCOMPARE(n.rings.size(), size_t(1));
            QVERIFY(n.rings[0].alone());
            QVERIFY(n.rings[0].previous.empty() && n.rings[0].next.empty());
            QCOMPARE(n.rings[0].ringId, published.at("a").rings[0].ringId);
            QCOMPARE(n.shard.count, 5); // a newcomer reads its fresh shard
        }
        const std::string why = test::wholeRings(fresh);
        QVERIFY2(why.empty(), why.c_str());

        // The next round of the same storm: the newcomers stay alone, more arrive alone.
        const Assignments told = fresh;
        Assignments later = swarmOf({"a", "b", "c", "d", "e", "f"});
        holdStormGrowth(later, told, addressesOf(later));
        for (const char *id : {"a", "b", "c", "d", "e"})
            QVERIFY2(later.at(id) == told.at(id), id);
        QVERIFY(later.at("f").rings[0].alone());
        QVERIFY(test::wholeRings(later).empty());
    }

    void aRingThatLosesAMemberIsToldAfresh()
    {
        const Assignments published = swarmOf({"a", "b", "c"});
        Assignments fresh = swarmOf({"a", "b", "c", "d"});
        fresh.erase("b"); // b left, d came
        seatRing(fresh, {"a", "c", "d"});
        const Assignments expected = fresh;
        holdStormGrowth(fresh, published, addressesOf(fresh));
        for (const char *id : {"a", "c", "d"}) {
            QVERIFY2(fresh.at(id).rings == expected.at(id).rings, id);
            QCOMPARE(fresh.at(id).rings[0].size, size_t(3));
        }
        QCOMPARE(fresh.at("a").shard.count, 3); // a's stage is the same: its shard is held
        QVERIFY(test::wholeRings(fresh).empty());
    }

    void aHaltedOrReCutMemberReleasesItsRing()
    {
        const Assignments published = swarmOf({"a", "b", "c"});
        // b's cluster is halted (skipAway): it sits alone, and the others average without it.
        Assignments halted = swarmOf({"a", "b", "c", "d"});
        seatRing(halted, {"a", "c", "d"});
        halted.at("b").rings = {RingRef{4, 0, 4, 0, 1, {}, {}}};
        const Assignments expected = halted;
        holdStormGrowth(halted, published, addressesOf(halted));
        for (const char *id : {"a", "b", "c", "d"})
            QVERIFY2(halted.at(id).rings == expected.at(id).rings, id);
        QVERIFY(test::wholeRings(halted).empty());

        // c's stage changes (its pipeline neighbour is another node now): a new stage,
        // so its ring is told afresh, and c reads its fresh shard.
        Assignments recut = swarmOf({"a", "b", "c", "d"});
        recut.at("c").next = PeerRef{"x", addressOf("x")};
        const Assignments recutExpected = recut;
        holdStormGrowth(recut, published, addressesOf(recut));
        for (const char *id : {"a", "b", "c", "d"})
            QVERIFY2(recut.at(id).rings == recutExpected.at(id).rings, id);
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
        // only once it is over: until then each sits alone, as a does.
        Assignments published = swarmOf({"a"});
        Assignment waiting;
        published.emplace("b", waiting);
        Assignments fresh = swarmOf({"a", "b", "c"});
        holdStormGrowth(fresh, published, addressesOf(fresh));
        for (const char *id : {"a", "b", "c"})
            QVERIFY2(fresh.at(id).rings[0].alone(), id);
        QVERIFY(fresh.at("a") == published.at("a"));
        QCOMPARE(fresh.at("b").shard.count, 3); // b's stage is new: all fresh but its ring seat
        QVERIFY(test::wholeRings(fresh).empty());
    }
};

QTEST_GUILESS_MAIN(TestStormHold)
#include "tst_storm_hold.moc"
