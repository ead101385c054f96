// SPDX-License-Identifier: GPL-3.0-or-later
// What the newer layer kinds do, checked by properties that hold for the real thing:
// dropout only in training, batch norm on the batch's own statistics, attention that
// treats tokens as a set, patches cut where they should be.
#include <QtTest>

#include "engine/device/compute_threads.h"
#include "engine/model/model_spec.h"
#include "engine/train/layer_ops.h"
#include "engine/train/layer_stack.h"

using namespace rookery;
using model::LayerKind;

namespace {

model::ModelSpec single(model::Shape input, model::LayerSpec layer)
{
    model::ModelSpec s;
    s.name = "single";
    s.input = std::move(input);
    s.layers = {layer};
    return s;
}

std::vector<torch::Tensor> weightsOf(train::LayerStack &net)
{
    std::vector<torch::Tensor> w;
    for (const auto &p : net->parameters())
        w.push_back(p);
    return w;
}

} // namespace

class TestLayerOps : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { device::applyThreadConfig({1, 1}); }

    void dropoutActsOnlyInTraining()
    {
        model::LayerSpec l{LayerKind::Dropout};
        l.rate = 0.25;
        train::LayerStack net(single(model::Shape{{4000}}, l), 0, 1);
        const auto x = torch::rand({8, 4000}) + 1; // no zeros of its own
        net->train();
        const auto y = net->forward(x);
        const double zeroShare = y.eq(0).to(torch::kFloat64).mean().item<double>();
        QVERIFY2(std::abs(zeroShare - 0.25) < 0.02, qPrintable(QString::number(zeroShare)));
        // The values kept are scaled by 1 / (1 - rate), so the expectation is unchanged.
        const auto kept = y.ne(0);
        QVERIFY(torch::allclose(y.masked_select(kept), x.masked_select(kept) / 0.75));
        net->eval();
        QVERIFY(torch::equal(net->forward(x), x));
    }

    void batchNormUsesTheBatchsStatisticsAlways()
    {
        train::LayerStack net(single(model::Shape{{3, 5, 5}}, {LayerKind::BatchNorm, 3}), 0, 1);
        const auto x = torch::randn({16, 3, 5, 5}) * 4 + 7;
        for (bool training : {true, false}) {
            training ? net->train() : net->eval();
            const auto y = net->forward(x);
            // Scale 1 and shift 0 at the start: each channel comes out with mean 0 and
            // variance 1 over the batch and the image, in evaluation as in training.
            const auto mean = y.mean({0, 2, 3});
            const auto var = y.var({0, 2, 3}, false);
            QVERIFY2(mean.abs().max().item<double>() < 1e-4, training ? "training" : "evaluation");
            QVERIFY2((var - 1).abs().max().item<double>() < 1e-3, training ? "training" : "evaluation");
        }
    }

    void encoderTreatsTokensAsASet()
    {
        model::LayerSpec l{LayerKind::Encoder, 16, 16};
        l.heads = 4;
        l.hidden = 32;
        train::LayerStack net(single(model::Shape{{6, 16}}, l), 0, 3);
        const auto x = torch::randn({2, 6, 16});
        const auto order = torch::tensor({3, 0, 5, 1, 4, 2});
        const auto y = net->forward(x);
        QCOMPARE(y.sizes().vec(), x.sizes().vec());
        // Without positions, attention and the MLP commute with any order of the tokens.
        QVERIFY(torch::allclose(net->forward(x.index_select(1, order)), y.index_select(1, order), 1e-5, 1e-5));
        // But tokens do see each other: changing one changes the others' outputs.
        auto changed = x.clone();
        changed.index_put_({torch::indexing::Slice(), 0}, torch::randn({2, 16}));
        const auto z = net->forward(changed);
        QVERIFY(!torch::allclose(z.narrow(1, 1, 5), y.narrow(1, 1, 5), 1e-4, 1e-4));
    }

    void encoderHeadsSplitTheWidth()
    {
        // One head against four over the same weights: the same shapes and parameters,
        // different mixing, so the head count is really applied.
        model::LayerSpec one{LayerKind::Encoder, 16, 16};
        one.heads = 1;
        one.hidden = 32;
        model::LayerSpec four = one;
        four.heads = 4;
        train::LayerStack net(single(model::Shape{{6, 16}}, one), 0, 3);
        auto w = weightsOf(net);
        const auto x = torch::randn({2, 6, 16});
        torch::NoGradGuard noGrad;
        const auto a = train::applyLayer(one, x, w.data(), false);
        const auto b = train::applyLayer(four, x, w.data(), false);
        QVERIFY(!torch::allclose(a, b, 1e-4, 1e-4));
    }

    void patchEmbedCutsPatchesInRowOrder()
    {
        train::LayerStack net(single(model::Shape{{1, 8, 8}}, {LayerKind::PatchEmbed, 1, 3, 4}), 0, 5);
        auto w = weightsOf(net);
        QCOMPARE(w.size(), size_t(3));
        QCOMPARE(w[2].sizes().vec(), (std::vector<int64_t>{4, 3})); // 4 patches of 3 values
        // One image lit in its top-right 4x4 patch only: token 1 of 4 (row-major) is the
        // projection of that patch; the others are bias plus their position.
        auto x = torch::zeros({1, 1, 8, 8});
        x.index_put_({0, 0, torch::indexing::Slice(0, 4), torch::indexing::Slice(4, 8)}, 1.0);
        torch::NoGradGuard noGrad;
        const auto y = net->forward(x); // [1, 4, 3]
        QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{1, 4, 3}));
        const auto lit = w[0].sum({1, 2, 3}) + w[1] + w[2][1];
        QVERIFY(torch::allclose(y[0][1], lit, 1e-5, 1e-5));
        for (int token : {0, 2, 3})
            QVERIFY(torch::allclose(y[0][token], w[1] + w[2][token], 1e-6, 1e-6));
    }

    void tokenMeanAveragesTokens()
    {
        train::LayerStack net(single(model::Shape{{5, 4}}, {LayerKind::TokenMean}), 0, 1);
        const auto x = torch::randn({3, 5, 4});
        QVERIFY(torch::allclose(net->forward(x), x.sum(1) / 5));
    }
};

QTEST_GUILESS_MAIN(TestLayerOps)
#include "tst_layer_ops.moc"
