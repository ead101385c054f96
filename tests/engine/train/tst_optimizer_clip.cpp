// SPDX-License-Identifier: GPL-3.0-or-later
// The optimizer clips what it applies: ordinary gradients pass untouched, a spike far
// over the running scale is cut to the bound, and a non-finite gradient is not applied.
#include <QtTest>

#include <cmath>

#include "engine/train/optimizer.h"

using namespace rookery;

namespace {

struct OneParameter
{
    torch::Tensor weight = torch::zeros({4}, torch::requires_grad());
    train::Optimizer optimizer;

    OneParameter()
        : optimizer({{"w", weight}}, plainSgd())
    { }
    static train::OptimizerConfig plainSgd()
    {
        train::OptimizerConfig c;
        c.kind = train::OptimizerKind::Sgd;
        c.learningRate = 1.0;
        c.momentum = 0;
        c.weightDecay = 0;
        return c;
    }
    // One step with the gradient `value` in every element; the change it made.
    double stepWith(float value)
    {
        weight.mutable_grad() = torch::full({4}, value);
        const double before = weight[0].item<double>();
        optimizer.step();
        return weight[0].item<double>() - before;
    }
};

// Float arithmetic on the weight: equal within float rounding.
bool near(double a, double b) { return std::abs(a - b) <= 1e-5 * std::max(1.0, std::abs(b)); }

} // namespace

class TestOptimizerClip : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void ordinaryGradientsPassAndSpikesAreCut()
    {
        OneParameter p;
        // Norms around 2 (0.9 to 1.1 per element, 4 elements): never clipped.
        for (int i = 0; i < 64; ++i) {
            const float g = i % 2 ? 0.9f : 1.1f;
            QVERIFY(near(p.stepWith(g), -double(g)));
        }
        QCOMPARE(p.optimizer.clippedSteps(), int64_t(0));
        // A gradient 1e6 times the usual: cut to 10 times the running norm (about 2).
        const double moved = -p.stepWith(1e6f);
        QCOMPARE(p.optimizer.clippedSteps(), int64_t(1));
        QVERIFY2(moved > 5 && moved < 15, qPrintable(QString::number(moved)));
        // ...and the spike barely moves the scale: the next ordinary step is not clipped.
        QVERIFY(near(p.stepWith(1.0f), -1.0));
        QCOMPARE(p.optimizer.clippedSteps(), int64_t(1));
    }

    void nonFiniteGradientsAreNotApplied()
    {
        OneParameter p;
        QVERIFY(near(p.stepWith(1.0f), -1.0));
        const int64_t steps = p.optimizer.stepCount();
        QCOMPARE(p.stepWith(NAN), 0.0);
        QCOMPARE(p.stepWith(INFINITY), 0.0);
        QCOMPARE(p.optimizer.skippedSteps(), int64_t(2));
        QCOMPARE(p.optimizer.stepCount(), steps + 2); // the steps still count
        QVERIFY(torch::isfinite(p.weight).all().item<bool>());
        QVERIFY(near(p.stepWith(1.0f), -1.0)); // and training goes on
    }

    void theWarmUpDoesNotClip()
    {
        OneParameter p;
        // Early gradients may be large and falling: the first kClipWarmup pass whole.
        for (int i = 0; i < int(train::Optimizer::kClipWarmup); ++i)
            QVERIFY(near(p.stepWith(float(std::pow(2.0, 8 - i))), -std::pow(2.0, 8 - i)));
        QCOMPARE(p.optimizer.clippedSteps(), int64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestOptimizerClip)
#include "tst_optimizer_clip.moc"
