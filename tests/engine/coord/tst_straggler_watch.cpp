// SPDX-License-Identifier: GPL-3.0-or-later
// The straggler check: a stage persistently slower than predicted, relative to the
// others, is reported with the factor its capacity should take, once, then left alone
// for the cooldown; and the plan re-cut around it moves layers away from it.
#include <QtTest>

#include <cmath>
#include <limits>

#include "engine/coord/plan_state.h"
#include "engine/coord/straggler_watch.h"
#include "engine/model/model_zoo.h"

using namespace rookery;
using namespace std::chrono_literals;
using coord::StageSpeed;
using coord::StragglerWatch;

class TestStragglerWatch : public QObject
{
    Q_OBJECT

    // Stages of the first layers reach half their predicted speed, those of the last
    // ones a fifth (the two are judged apart), and node c, holding the first layers,
    // `cRatio` of its prediction.
    static std::vector<StageSpeed> swarm(double cRatio)
    {
        return {{"a", "0-3", 1000, 500},
                {"b", "3-6", 400, 80},
                {"c", "0-3", 1000, 1000 * cRatio},
                {"d", "3-6", 400, 80},
                {"e", "0-3", 1000, 500}};
    }

private Q_SLOTS:
    void aStageSlowerThanTheOthersIsReportedAfterThreeChecks()
    {
        StragglerWatch w;
        auto t = StragglerWatch::Clock::time_point{};
        QVERIFY(w.check(swarm(1.0 / 6), t).empty()); // 3x slower than the usual 0.5
        QVERIFY(w.check(swarm(1.0 / 6), t += 5s).empty());
        const auto found = w.check(swarm(1.0 / 6), t += 5s);
        QCOMPARE(found.size(), size_t(1));
        QCOMPARE(found[0].nodeId, std::string("c"));
        // The median ratio of its group (0.5, 1/6, 0.5) is 0.5: c runs at a third of that.
        QVERIFY(std::abs(found[0].factor - 1.0 / 3) < 1e-9);
        // Left alone during the cooldown, then watched again.
        QVERIFY(w.check(swarm(1.0 / 6), t += 5s).empty());
        t += 60s;
        QVERIFY(w.check(swarm(1.0 / 6), t).empty());
        QVERIFY(w.check(swarm(1.0 / 6), t += 5s).empty());
        QCOMPARE(w.check(swarm(1.0 / 6), t += 5s).size(), size_t(1));
    }

    void aSlowCheckMustBePersistent()
    {
        StragglerWatch w;
        auto t = StragglerWatch::Clock::time_point{};
        QVERIFY(w.check(swarm(0.2), t).empty());
        QVERIFY(w.check(swarm(0.2), t += 5s).empty());
        QVERIFY(w.check(swarm(0.5), t += 5s).empty()); // back to normal: the count starts over
        QVERIFY(w.check(swarm(0.2), t += 5s).empty());
        QVERIFY(w.check(swarm(0.2), t += 5s).empty());
        QCOMPARE(w.check(swarm(0.2), t += 5s).size(), size_t(1));
    }

    void withinTheThresholdIsNotAStraggler()
    {
        StragglerWatch w;
        auto t = StragglerWatch::Clock::time_point{};
        for (int i = 0; i < 6; ++i)
            QVERIFY(w.check(swarm(0.34), t += 5s).empty()); // 0.68 of the usual: under 1.5x slower
    }

    void unmeasuredAndNonsenseFiguresAreIgnored()
    {
        StragglerWatch w;
        auto t = StragglerWatch::Clock::time_point{};
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        // A lying or unmeasured node cannot make the others look slow, nor be one.
        const std::vector<StageSpeed> s{{"a", "0-6", 1000, 500}, {"b", "0-6", 1000, 0},
                                        {"c", "0-6", 1000, nan}, {"d", "0-6", 1000, inf},
                                        {"e", "0-6", -5, 1},     {"f", "other", 1000, 10}}; // alone: as slow as ever
        for (int i = 0; i < 5; ++i)
            QVERIFY(w.check(s, t += 5s).empty()); // one measured stage: nothing to compare with
    }

    // Clusters cut differently: no stage shares its layers with another. Each is judged
    // against its own first checks at its layers: one that becomes 3x slower is found;
    // at new layers its usual is learnt again; one not measured for a check forgets it.
    void aStageAloneIsJudgedAgainstItsOwnEarlierSpeed()
    {
        const auto cutApart = [](double cRatio, const char *cLayers = "0-2") {
            return std::vector<StageSpeed>{{"a", "0-3", 1000, 500},
                                           {"b", "3-6", 400, 80},
                                           {"c", cLayers, 1000, 1000 * cRatio},
                                           {"d", "2-6", 400, 80}};
        };
        StragglerWatch w;
        auto t = StragglerWatch::Clock::time_point{};
        QVERIFY(w.check(cutApart(0.15), t).empty()); // learning: not judged yet, however slow
        QVERIFY(w.check(cutApart(0.5), t += 5s).empty());
        QVERIFY(w.check(cutApart(0.6), t += 5s).empty()); // its usual: the median, 0.5
        QVERIFY(w.check(cutApart(0.4), t += 5s).empty()); // 0.8 of it: within the threshold
        QVERIFY(w.check(cutApart(0.15), t += 5s).empty());
        QVERIFY(w.check(cutApart(0.15), t += 5s).empty());
        const auto found = w.check(cutApart(0.15), t += 5s);
        QCOMPARE(found.size(), size_t(1));
        QCOMPARE(found[0].nodeId, std::string("c"));
        QVERIFY(std::abs(found[0].factor - 0.3) < 1e-9);

        // Re-cut to other layers, after the cooldown: slow there from the start is its
        // new usual.
        t += 60s;
        for (int i = 0; i < 6; ++i)
            QVERIFY(w.check(cutApart(0.15, "0-1"), t += 5s).empty());
        // A check without it: what was learnt is dropped, so a slower speed when it is
        // back is learnt, not judged.
        auto withoutC = cutApart(1);
        withoutC.erase(withoutC.begin() + 2);
        QVERIFY(w.check(withoutC, t += 5s).empty());
        for (int i = 0; i < 6; ++i)
            QVERIFY(w.check(cutApart(0.04, "0-1"), t += 5s).empty());
        // The others, each alone in its group and steady, never were stragglers.
    }

    void recalibratingMovesLayersAwayFromTheStraggler()
    {
        swarm::FormationOptions o;
        o.seed = 3;
        o.clusterSize = 2;
        coord::PlanState plan({model::mlpSpec(), 64, 1}, o);
        // Links of a gigabit: each stage's upload (131 KB, 1 ms) hides behind its compute
        // (about 2 ms), so compute three times slower is what the stage waits for. (At
        // 12.5 MB/s the uploads, 10 ms, would bind either way, and nothing would move.)
        swarm::Capacity c{50, int64_t(1) << 30, 125e6, true};
        plan.apply({}, {{"a", c}, {"b", c}});
        plan.planAll();
        const auto before = plan.placements();
        QCOMPARE(before.size(), size_t(2));
        // The stage with more layers: the other holds the large first layer alone, and a
        // layer cannot be split.
        const auto layers = [](const coord::Placement &p) { return p.lastLayer - p.firstLayer; };
        const auto &slow = layers(before[0]) > layers(before[1]) ? before[0] : before[1];
        const size_t heldBefore = layers(slow);
        const auto change = plan.recalibrate(slow.nodeId, 1.0 / 3);
        QCOMPARE(change.changedClusters.size(), size_t(1));
        size_t heldAfter = 0;
        for (const auto &p : plan.placements())
            if (p.nodeId == slow.nodeId) {
                QVERIFY(p.training);
                QCOMPARE(p.cluster, slow.cluster); // nobody moved between clusters
                heldAfter = p.lastLayer - p.firstLayer;
            }
        QVERIFY2(heldAfter < heldBefore, qPrintable(QStringLiteral("%1 -> %2 layers").arg(heldBefore).arg(heldAfter)));
        // Nonsense factors and unknown nodes change nothing.
        QVERIFY(plan.recalibrate("nobody", 0.5).changedClusters.empty());
        QVERIFY(plan.recalibrate(slow.nodeId, 1.5).changedClusters.empty());
        QVERIFY(plan.recalibrate(slow.nodeId, std::numeric_limits<double>::quiet_NaN()).changedClusters.empty());
    }
};

QTEST_GUILESS_MAIN(TestStragglerWatch)
#include "tst_straggler_watch.moc"
