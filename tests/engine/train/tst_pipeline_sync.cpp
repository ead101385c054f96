// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline in synchronous mode against the unsplit Trainer: same seed, same data
// order, same updates, so the parameters must agree.
#include <QtTest>

#include <cmath>

#include "engine/common/error.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/model/model_zoo.h"
#include "engine/train/pipeline.h"
#include "engine/train/trainer.h"
#include "tests/support/test_support.h"

using namespace rookery;

namespace {

// Largest |a - b| over largest |a|, per tensor; the worst tensor's figure.
double worstRelativeDifference(const std::vector<NamedTensor> &a, const std::vector<NamedTensor> &b)
{
    if (a.size() != b.size())
        return INFINITY;
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].name != b[i].name || a[i].shape != b[i].shape || a[i].dtype != DType::Float32)
            return INFINITY;
        const auto *x = reinterpret_cast<const float *>(a[i].data.data());
        const auto *y = reinterpret_cast<const float *>(b[i].data.data());
        double diff = 0, scale = 0;
        for (int64_t k = 0; k < a[i].elements(); ++k) {
            diff = std::max(diff, double(std::abs(x[k] - y[k])));
            scale = std::max(scale, double(std::abs(x[k])));
        }
        worst = std::max(worst, diff / std::max(scale, 1e-30));
    }
    return worst;
}

// A zoo model by name; "residual": a small CNN of residual blocks (each one unit the
// pipeline may not cut inside); "normed": GELU, average pooling, Tanh and a LayerNorm;
// "vit": patch embedding, two transformer encoder blocks and a token-mean head;
// "batchnormed": batch norm over channels and over features. So the stages'
// explicit-weight path is checked against each layer's module.
model::ModelSpec specNamed(const QString &name)
{
    using model::LayerKind;
    model::ModelSpec s;
    s.name = name.toStdString();
    s.input = model::Shape{{1, 28, 28}};
    s.classes = 10;
    if (name == QLatin1String("normed"))
        s.layers = {{LayerKind::Conv2d, 1, 4, 3, 1, 1},
                    {LayerKind::GELU},
                    {LayerKind::AvgPool2d, 0, 0, 2, 2, 0},
                    {LayerKind::Tanh},
                    {LayerKind::Flatten},
                    {LayerKind::Linear, 4 * 14 * 14, 64},
                    {LayerKind::LayerNorm, 64},
                    {LayerKind::GELU},
                    {LayerKind::Linear, 64, 10}};
    else if (name == QLatin1String("vit"))
        s.layers = {{LayerKind::PatchEmbed, 1, 32, 7},
                    {LayerKind::Encoder, 32, 32, 0, 1, 0, 64, 4},
                    {LayerKind::Encoder, 32, 32, 0, 1, 0, 64, 4},
                    {LayerKind::TokenMean},
                    {LayerKind::LayerNorm, 32},
                    {LayerKind::Linear, 32, 10}};
    else if (name == QLatin1String("batchnormed"))
        s.layers = {{LayerKind::Conv2d, 1, 4, 3, 1, 1},
                    {LayerKind::BatchNorm, 4},
                    {LayerKind::ReLU},
                    {LayerKind::MaxPool2d, 0, 0, 2, 2, 0},
                    {LayerKind::Flatten},
                    {LayerKind::Linear, 4 * 14 * 14, 64},
                    {LayerKind::BatchNorm, 64},
                    {LayerKind::ReLU},
                    {LayerKind::Linear, 64, 10}};
    else if (name == QLatin1String("residual"))
        s.layers = {{LayerKind::Conv2d, 1, 8, 3, 1, 1},
                    {LayerKind::ReLU},
                    {LayerKind::Residual, 8, 8, 3, 1, 0},
                    {LayerKind::MaxPool2d, 0, 0, 2, 2, 0},
                    {LayerKind::Residual, 8, 8, 3, 1, 0},
                    {LayerKind::MaxPool2d, 0, 0, 2, 2, 0},
                    {LayerKind::Flatten},
                    {LayerKind::Linear, 8 * 7 * 7, 10}};
    else
        return model::modelByName(s.name);
    return s;
}

} // namespace

class TestPipelineSync : public QObject
{
    Q_OBJECT

    std::shared_ptr<data::ImageDataset> m_train;

private Q_SLOTS:
    void initTestCase()
    {
        device::applyThreadConfig({1, 1});
        m_train =
            std::make_shared<data::ImageDataset>(data::loadFashionMnist(test::fashionMnistDir(), data::Split::Train));
    }

    // Acceptance: 2 and 3 stages in synchronous mode end with the unsplit model's
    // parameters after N steps, within 1e-5 relative.
    void matchesUnsplitTrainer_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<std::vector<size_t>>("cuts");
        QTest::addColumn<int>("optimizer");
        QTest::addColumn<int>("steps");
        const int sgd = int(train::OptimizerKind::Sgd), adamw = int(train::OptimizerKind::AdamW);
        QTest::newRow("mlp 1 stage sgd") << "mlp" << std::vector<size_t>{} << sgd << 40;
        QTest::newRow("mlp 2 stages sgd") << "mlp" << std::vector<size_t>{2} << sgd << 40;
        QTest::newRow("mlp 3 stages sgd") << "mlp" << std::vector<size_t>{2, 4} << sgd << 40;
        QTest::newRow("mlp 3 stages, flatten alone, sgd") << "mlp" << std::vector<size_t>{1, 3} << sgd << 40;
        QTest::newRow("mlp 2 stages adamw") << "mlp" << std::vector<size_t>{3} << adamw << 40;
        QTest::newRow("mlp 3 stages adamw") << "mlp" << std::vector<size_t>{2, 5} << adamw << 40;
        QTest::newRow("cnn 2 stages sgd") << "cnn" << std::vector<size_t>{3} << sgd << 15;
        QTest::newRow("cnn 3 stages sgd") << "cnn" << std::vector<size_t>{3, 7} << sgd << 15;
        QTest::newRow("residual 2 stages sgd") << "residual" << std::vector<size_t>{2} << sgd << 15;
        QTest::newRow("residual 3 stages adamw") << "residual" << std::vector<size_t>{3, 5} << adamw << 15;
        QTest::newRow("normed 2 stages sgd") << "normed" << std::vector<size_t>{3} << sgd << 15;
        QTest::newRow("normed 3 stages adamw") << "normed" << std::vector<size_t>{2, 6} << adamw << 15;
        QTest::newRow("vit 2 stages sgd") << "vit" << std::vector<size_t>{2} << sgd << 10;
        // SGD for both: the gradient of attention's key bias is zero in exact arithmetic
        // (softmax ignores a constant added to every score), so in floats it is rounding
        // noise, which AdamW divides by its own size into full-rate steps of random sign.
        QTest::newRow("vit 3 stages sgd") << "vit" << std::vector<size_t>{1, 3} << sgd << 10;
        QTest::newRow("batchnormed 2 stages sgd") << "batchnormed" << std::vector<size_t>{4} << sgd << 15;
        QTest::newRow("batchnormed 3 stages adamw") << "batchnormed" << std::vector<size_t>{2, 7} << adamw << 15;
    }

    void matchesUnsplitTrainer()
    {
        QFETCH(QString, model);
        QFETCH(std::vector<size_t>, cuts);
        QFETCH(int, optimizer);
        QFETCH(int, steps);
        train::TrainerConfig tc;
        tc.model = specNamed(model);
        tc.optimizer.kind = train::OptimizerKind(optimizer);
        tc.optimizer.learningRate = tc.optimizer.kind == train::OptimizerKind::Sgd ? 0.05 : 1e-3;
        tc.optimizer.weightDecay = 1e-4;
        tc.batchSize = 64;
        tc.seed = 3;
        train::Trainer trainer(tc, m_train);
        double trainerLoss = 0;
        for (int i = 0; i < steps; ++i)
            trainerLoss += trainer.step().loss / steps;

        train::PipelineConfig pc;
        pc.model = tc.model;
        pc.cuts = cuts;
        pc.optimizer = tc.optimizer;
        pc.microbatchSize = tc.batchSize;
        pc.mode = train::PipelineMode::Synchronous;
        pc.seed = tc.seed;
        train::Pipeline pipeline(pc, m_train);
        QCOMPARE(pipeline.stageCount(), int(cuts.size()) + 1);
        const double before =
            worstRelativeDifference(pipeline.parameters(), train::Trainer(tc, m_train).state().parameters);
        QCOMPARE(before, 0.0); // the same initial weights, bit for bit
        // Two runs, to show that a run continues where the last one stopped.
        auto first = pipeline.run(steps / 2);
        auto second = pipeline.run(steps - steps / 2);
        QVERIFY(first.finished && second.finished);
        QCOMPARE(first.microbatches + second.microbatches, int64_t(steps));
        for (const auto &s : second.stages) {
            QCOMPARE(s.stalenessMax, int64_t(0)); // one microbatch in flight: never stale
            QCOMPARE(s.backwards, int64_t(steps - steps / 2));
        }
        const double diff = worstRelativeDifference(pipeline.parameters(), trainer.state().parameters);
        const double pipelineLoss =
            (first.meanLoss * double(first.microbatches) + second.meanLoss * double(second.microbatches)) / steps;
        qInfo("%d steps: worst relative parameter difference %.3g; mean loss %.6f vs %.6f", steps, diff, pipelineLoss,
              trainerLoss);
        QVERIFY2(diff <= 1e-5, qPrintable(QString::number(diff)));
        QVERIFY(std::abs(pipelineLoss - trainerLoss) <= 1e-5 * trainerLoss);
    }

    // k microbatches of B accumulated are one batch of kB.
    void accumulationMatchesLargerBatch()
    {
        train::TrainerConfig tc;
        tc.model = model::mlpSpec();
        tc.batchSize = 64;
        tc.seed = 5;
        train::Trainer trainer(tc, m_train);
        for (int i = 0; i < 20; ++i)
            trainer.step();
        train::PipelineConfig pc;
        pc.model = tc.model;
        pc.cuts = {2};
        pc.optimizer = tc.optimizer;
        pc.microbatchSize = 32;
        pc.accumulation = 2;
        pc.mode = train::PipelineMode::Synchronous;
        pc.seed = tc.seed;
        train::Pipeline pipeline(pc, m_train);
        const auto report = pipeline.run(40);
        QCOMPARE(report.stages[0].updates, int64_t(20));
        const double diff = worstRelativeDifference(pipeline.parameters(), trainer.state().parameters);
        qInfo("2 x 32 accumulated vs batches of 64: worst relative difference %.3g", diff);
        QVERIFY2(diff <= 1e-5, qPrintable(QString::number(diff)));
    }

    void evaluatesLikeTheTrainer()
    {
        const auto test = data::headOf(data::loadFashionMnist(test::fashionMnistDir(), data::Split::Test), 2000);
        train::TrainerConfig tc;
        tc.model = model::mlpSpec();
        train::Trainer trainer(tc, m_train);
        train::PipelineConfig pc;
        pc.model = tc.model;
        pc.cuts = {3};
        train::Pipeline pipeline(pc, m_train);
        const auto a = trainer.evaluate(test, 500), b = pipeline.evaluate(test, 500);
        QCOMPARE(b.samples, a.samples);
        QCOMPARE(b.accuracy, a.accuracy);
        QVERIFY(std::abs(b.loss - a.loss) <= 1e-6 * a.loss);
    }

    void rejectsBadConfigs()
    {
        train::PipelineConfig pc;
        pc.model = model::mlpSpec();
        pc.cuts = {0};
        QVERIFY_THROWS_EXCEPTION(Error, train::Pipeline(pc, m_train));
        pc.cuts = {3, 3};
        QVERIFY_THROWS_EXCEPTION(Error, train::Pipeline(pc, m_train));
        pc.cuts = {6};
        QVERIFY_THROWS_EXCEPTION(Error, train::Pipeline(pc, m_train));
        pc.cuts = {2};
        pc.microbatchSize = 0;
        QVERIFY_THROWS_EXCEPTION(Error, train::Pipeline(pc, m_train));
        pc.microbatchSize = 64;
        pc.model.input.dims = {3, 32, 32};
        QVERIFY_THROWS_EXCEPTION(Error, train::Pipeline(pc, m_train));
        pc.model = model::mlpSpec();
        QVERIFY_THROWS_EXCEPTION(Error, train::Pipeline(pc, nullptr));
    }
};

QTEST_APPLESS_MAIN(TestPipelineSync)
#include "tst_pipeline_sync.moc"
