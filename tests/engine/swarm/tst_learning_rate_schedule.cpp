// SPDX-License-Identifier: GPL-3.0-or-later
// The learning rate of a swarm run's inner steps: constant for the first 80% of the
// run, then a straight line down to a tenth at the last step.
#include <QtTest>

#include "engine/swarm/learning_rate_schedule.h"

using namespace rookery::swarm;

class TestLearningRateSchedule : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void constantThenLinearToATenth()
    {
        // 1,000 steps of a run at 0.5: 0.5 up to step 800, then down by 0.045 per 20 steps.
        QCOMPARE(annealedLearningRate(0.5, 0, 1000), 0.5);
        QCOMPARE(annealedLearningRate(0.5, 799, 1000), 0.5);
        QCOMPARE(annealedLearningRate(0.5, 800, 1000), 0.5);
        QVERIFY(qFuzzyCompare(annealedLearningRate(0.5, 900, 1000), 0.5 * (1 - 0.9 * 0.5)));
        QVERIFY(qFuzzyCompare(annealedLearningRate(0.5, 1000, 1000), 0.05));
        // Past the end (a final averaging round's step) it stays at the floor.
        QVERIFY(qFuzzyCompare(annealedLearningRate(0.5, 1001, 1000), 0.05));
        // It only ever falls.
        double last = annealedLearningRate(0.05, 0, 1200);
        for (int64_t s = 1; s <= 1200; ++s) {
            const double now = annealedLearningRate(0.05, s, 1200);
            QVERIFY(now <= last);
            last = now;
        }
    }

    void aRunWithoutAnEndKeepsItsRate()
    {
        QCOMPARE(annealedLearningRate(0.05, 123456, 0), 0.05);
        QCOMPARE(annealedLearningRate(0.05, 5, -1), 0.05);
    }

    void aTinyRunStillEndsAtATenth()
    {
        QVERIFY(qFuzzyCompare(annealedLearningRate(1.0, 1, 1), 0.1));
        QCOMPARE(annealedLearningRate(1.0, 0, 1), 1.0);
    }
};

QTEST_APPLESS_MAIN(TestLearningRateSchedule)
#include "tst_learning_rate_schedule.moc"
