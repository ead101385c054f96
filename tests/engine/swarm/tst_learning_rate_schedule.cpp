// SPDX-License-Identifier: GPL-3.0-or-later
// The learning rate of a swarm run's inner steps: by default constant for the first 80%
// of the run, then a straight line down to a tenth at the last step; a job may ask for a
// warm-up and a cosine decay.
#include <QtTest>

#include "engine/swarm/learning_rate_schedule.h"

using namespace rookery;
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

    // A job's schedule: warm-up then cosine to its final factor; every schedule the
    // same function of the step, so stages and clusters agree without a word.
    void warmUpThenCosine()
    {
        train::OptimizerConfig o;
        o.learningRate = 0.001;
        o.warmupSteps = 100;
        o.decay = train::LearningRateDecay::Cosine;
        o.finalLearningRateFactor = 0.05;
        QVERIFY(qFuzzyCompare(scheduledLearningRate(o, 0, 1100), 0.001 / 100)); // the first step
        QVERIFY(qFuzzyCompare(scheduledLearningRate(o, 49, 1100), 0.0005));
        QVERIFY(qFuzzyCompare(scheduledLearningRate(o, 100, 1100), 0.001));                       // warm
        QVERIFY(qFuzzyCompare(scheduledLearningRate(o, 600, 1100), 0.001 * (0.05 + 0.95 * 0.5))); // half-way
        QVERIFY(qFuzzyCompare(scheduledLearningRate(o, 1100, 1100), 0.00005));
        double last = 0;
        for (int64_t s = 0; s < 100; ++s) { // rises, then only falls
            QVERIFY(scheduledLearningRate(o, s, 1100) > last);
            last = scheduledLearningRate(o, s, 1100);
        }
        for (int64_t s = 100; s <= 1100; ++s) {
            QVERIFY(scheduledLearningRate(o, s, 1100) <= last);
            last = scheduledLearningRate(o, s, 1100);
        }
        o.decay = train::LearningRateDecay::Constant;
        QCOMPARE(scheduledLearningRate(o, 1000, 1100), 0.001);
        o.decay = train::LearningRateDecay::Tail; // the default: as before
        o.warmupSteps = 0;
        o.finalLearningRateFactor = 0.1;
        for (int64_t s : {0, 500, 850, 1100})
            QCOMPARE(scheduledLearningRate(o, s, 1100), annealedLearningRate(0.001, s, 1100));
        // The schedule reaches the nodes inside the optimizer's JSON, and older JSON
        // without it reads as the tail anneal.
        o.decay = train::LearningRateDecay::Cosine;
        o.warmupSteps = 7;
        QVERIFY(train::optimizerConfigFromJson(train::toJson(o)) == o);
        const auto old = train::optimizerConfigFromJson(
            R"({"kind":"sgd","lr":0.05,"momentum":0.9,"weight_decay":0,"beta1":0.9,"beta2":0.999,"eps":1e-8})");
        QVERIFY(old.decay == train::LearningRateDecay::Tail && old.warmupSteps == 0);
    }

    void aTinyRunStillEndsAtATenth()
    {
        QVERIFY(qFuzzyCompare(annealedLearningRate(1.0, 1, 1), 0.1));
        QCOMPARE(annealedLearningRate(1.0, 0, 1), 1.0);
    }
};

QTEST_APPLESS_MAIN(TestLearningRateSchedule)
#include "tst_learning_rate_schedule.moc"
