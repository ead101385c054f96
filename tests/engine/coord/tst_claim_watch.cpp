// SPDX-License-Identifier: GPL-3.0-or-later
// The claim check: a stage far slower than its own node's claimed compute predicts,
// three checks running, is reported once; honest stages (a tenth of their claim, or a
// single slow check) and unmeasured figures are not.
#include <QtTest>

#include <limits>

#include "engine/coord/claim_watch.h"

using namespace rookery;
using coord::ClaimWatch;
using coord::StageSpeed;

class TestClaimWatch : public QObject
{
    Q_OBJECT

    // Honest stages at a half and a twentieth of their claims; "liar" at `liarRatio`;
    // each with 10^8 FLOP of work per microbatch.
    static std::vector<StageSpeed> swarm(double liarRatio)
    {
        return {{"honest", "0-3", 1000, 500, 1e8},
                {"loaded", "3-6", 400, 20, 1e8},
                {"liar", "0-3", 2e7, 2e7 * liarRatio, 1e8}};
    }

private Q_SLOTS:
    void aClaimTheNodeNeverReachesIsReportedAfterThreeChecks()
    {
        ClaimWatch w;
        QVERIFY(w.check(swarm(1e-5)).empty());
        QVERIFY(w.check(swarm(1e-5)).empty());
        const auto found = w.check(swarm(1e-5));
        QCOMPARE(found.size(), size_t(1));
        QCOMPARE(found[0].nodeId, std::string("liar"));
        QCOMPARE(found[0].predicted, 2e7);
        QCOMPARE(found[0].measured, 200.0);
        // Once: it is expected to leave the plan.
        for (int i = 0; i < 5; ++i)
            QVERIFY(w.check(swarm(1e-5)).empty());
    }

    void theBoundIsTheSettingsRatio()
    {
        ClaimWatch w(ClaimWatch::Settings{100, 1});
        QVERIFY(w.check(swarm(1.0 / 90)).empty()); // within 100x of its claim
        QCOMPARE(w.check(swarm(1.0 / 110)).size(), size_t(1));
    }

    void aRunOfLowChecksMustBeUnbroken()
    {
        ClaimWatch w;
        QVERIFY(w.check(swarm(1e-5)).empty());
        QVERIFY(w.check(swarm(1e-5)).empty());
        QVERIFY(w.check(swarm(0.5)).empty()); // it did train at its claim once: the run ends
        QVERIFY(w.check(swarm(1e-5)).empty());
        QVERIFY(w.check(swarm(1e-5)).empty());
        QCOMPARE(w.check(swarm(1e-5)).size(), size_t(1));
    }

    void aStageNotMeasuredBreaksTheRunAndIsNeverJudged()
    {
        ClaimWatch w(ClaimWatch::Settings{1000, 2});
        QVERIFY(w.check(swarm(1e-5)).empty());
        // Paused, or not yet measured: absent, zero, negative or non-finite figures.
        QVERIFY(w.check({{"liar", "0-3", 2e7, 0, 1e8}}).empty());
        QVERIFY(w.check(swarm(1e-5)).empty());
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        for (const auto &bad : std::vector<StageSpeed>{{"x", "0-3", 2e7, -1, 1e8},
                                                       {"x", "0-3", nan, 1, 1e8},
                                                       {"x", "0-3", inf, 1, 1e8},
                                                       {"x", "0-3", 0, 1, 1e8},
                                                       {"x", "0-3", 2e7, nan, 1e8},
                                                       {"x", "0-3", 2e7, 1, nan}})
            for (int i = 0; i < 3; ++i)
                QVERIFY(w.check({bad}).empty());
    }

    // A stage of little work spends its time on fixed costs per microbatch: it shows
    // nothing of the node's compute and is not judged, however far below its claim.
    void aStageOfLittleWorkIsNotJudged()
    {
        ClaimWatch w(ClaimWatch::Settings{1000, 1, 2e7});
        QVERIFY(w.check({{"tiny", "5-6", 1e6, 100, 1.9e7}}).empty());
        QCOMPARE(w.check({{"tiny", "5-6", 1e6, 100, 2e7}}).size(), size_t(1));
    }
};

QTEST_GUILESS_MAIN(TestClaimWatch)
#include "tst_claim_watch.moc"
