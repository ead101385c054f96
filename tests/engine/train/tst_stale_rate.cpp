// SPDX-License-Identifier: GPL-3.0-or-later
// A pipeline stage's stale gradients take smaller steps: staleRateScale's rule, an
// optimizer step at a scaled rate (and the weight prediction that follows it), and a
// stage whose second backward comes one step stale moving its weights half as far as
// the same stage at a constant rate.
#include <QtTest>

#include <cmath>

#include "engine/common/error.h"
#include "engine/model/model_zoo.h"
#include "engine/train/optimizer.h"
#include "engine/train/optimizer_config.h"
#include "engine/train/stage_compute.h"
#include "engine/train/torch_convert.h"

using namespace rookery;

namespace {

train::OptimizerConfig sgd(double lr, double momentum)
{
    train::OptimizerConfig c;
    c.kind = train::OptimizerKind::Sgd;
    c.learningRate = lr;
    c.momentum = momentum;
    c.weightDecay = 0;
    return c;
}

std::vector<torch::Tensor> tensorsOf(const train::StageCompute &stage)
{
    std::vector<torch::Tensor> out;
    for (const auto &p : stage.parameters())
        out.push_back(train::fromNamed(p).clone());
    return out;
}

} // namespace

class TestStaleRate : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void theScaleIsOneOverOnePlusTheStaleness()
    {
        QCOMPARE(train::staleRateScale(0), 1.0);
        QCOMPARE(train::staleRateScale(-3), 1.0);
        QCOMPARE(train::staleRateScale(1), 0.5);
        QCOMPARE(train::staleRateScale(4), 0.2);
    }

    // SGD with momentum 0.5 at rate 0.1, by hand: the first step sets the buffer to the
    // gradient (2), the second to 0.5 * 2 + 2 = 3; each moves the weight by the rate
    // times its scale times the buffer. Prediction extrapolates at the last step's rate.
    void aStepMovesByItsScaledRate()
    {
        torch::Tensor w = torch::zeros({3}, torch::requires_grad());
        train::Optimizer o({{"w", w}}, sgd(0.1, 0.5));
        w.mutable_grad() = torch::full({3}, 2.0f);
        o.step(0.25);
        QVERIFY(std::abs(w[0].item<double>() - (-0.1 * 0.25 * 2)) < 1e-6);
        o.step(1);
        QVERIFY(std::abs(w[1].item<double>() - (-0.05 - 0.1 * 3)) < 1e-6);
        o.step(0.5); // buffer 0.5 * 3 + 2 = 3.5
        const double now = w[2].item<double>();
        QVERIFY(std::abs(now - (-0.35 - 0.05 * 3.5)) < 1e-6);
        std::vector<torch::Tensor> predicted{torch::empty({3})};
        o.predictInto(predicted, 2);
        QVERIFY(std::abs(predicted[0][0].item<double>() - (now - 2 * 0.05 * 3.5)) < 1e-6);
        // Out of range: refused before anything moves.
        QVERIFY_THROWS_EXCEPTION(Error, o.step(0));
        QVERIFY_THROWS_EXCEPTION(Error, o.step(1.5));
        QCOMPARE(o.stepCount(), int64_t(3));
        QCOMPARE(w[2].item<double>(), now);
    }

    // Two microbatches in flight on the MLP's first stage, their backwards in order: the
    // first is fresh (a whole step), the second one step stale. With the rate scaled, its
    // step moves every weight exactly half as far as the same stage's at a constant rate
    // (momentum 0 and no prediction, so both compute the same gradient on the same
    // stashed weights).
    void aStaleBackwardStepsAtItsScale()
    {
        const auto spec = model::mlpSpec();
        train::StageCompute scaled(spec, 0, 3, 7, sgd(0.1, 0), 1, false, true);
        train::StageCompute constant(spec, 0, 3, 7, sgd(0.1, 0), 1, false, false);
        torch::manual_seed(3);
        const torch::Tensor x1 = torch::rand({8, 1, 28, 28}), x2 = torch::rand({8, 1, 28, 28});
        const torch::Tensor g1 = torch::randn({8, 512}), g2 = torch::randn({8, 512});
        for (auto *stage : {&scaled, &constant}) {
            stage->forward(1, x1);
            stage->forward(2, x2);
            QCOMPARE(stage->backward(1, g1).staleness, int64_t(0));
        }
        const auto scaledAfterOne = tensorsOf(scaled), constantAfterOne = tensorsOf(constant);
        for (size_t i = 0; i < scaledAfterOne.size(); ++i)
            QVERIFY(torch::equal(scaledAfterOne[i], constantAfterOne[i])); // a fresh step is whole
        QCOMPARE(scaled.backward(2, g2).staleness, int64_t(1));
        QCOMPARE(constant.backward(2, g2).staleness, int64_t(1));
        const auto scaledAfterTwo = tensorsOf(scaled), constantAfterTwo = tensorsOf(constant);
        double moved = 0;
        for (size_t i = 0; i < scaledAfterTwo.size(); ++i) {
            const torch::Tensor half = scaledAfterTwo[i] - scaledAfterOne[i];
            const torch::Tensor whole = constantAfterTwo[i] - constantAfterOne[i];
            moved += whole.abs().sum().item<double>();
            QVERIFY2(torch::allclose(half, whole * 0.5, 1e-5, 1e-7), scaled.parameters()[i].name.c_str());
        }
        QVERIFY(moved > 0);
    }
};

QTEST_APPLESS_MAIN(TestStaleRate)
#include "tst_stale_rate.moc"
