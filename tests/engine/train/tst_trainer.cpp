// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <cmath>

#include "engine/common/error.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/model/model_zoo.h"
#include "engine/train/evaluate.h"
#include "engine/train/trainer.h"
#include "tests/support/test_support.h"

using namespace rookery;

class TestTrainer : public QObject
{
    Q_OBJECT

    std::shared_ptr<data::ImageDataset> m_train;
    data::ImageDataset m_test;

    train::TrainerConfig mlpConfig(train::OptimizerKind kind = train::OptimizerKind::Sgd)
    {
        train::TrainerConfig c;
        c.model = model::mlpSpec();
        c.optimizer.kind = kind;
        c.optimizer.learningRate = kind == train::OptimizerKind::Sgd ? 0.05 : 1e-3;
        c.batchSize = 64;
        c.seed = 1;
        return c;
    }

private Q_SLOTS:
    void initTestCase()
    {
        device::applyThreadConfig({1, 2});
        m_train =
            std::make_shared<data::ImageDataset>(data::loadFashionMnist(test::fashionMnistDir(), data::Split::Train));
        m_test = data::loadFashionMnist(test::fashionMnistDir(), data::Split::Test);
    }

    // Acceptance: the MLP reaches 85% test accuracy after a fixed number of steps.
    void mlpReaches85PercentIn1500Steps()
    {
        train::Trainer t(mlpConfig(), m_train);
        const double before = t.evaluate(m_test).accuracy;
        QVERIFY2(before < 0.3, "an untrained model should guess");
        for (int i = 0; i < 1500; ++i)
            t.step();
        const auto e = t.evaluate(m_test);
        qInfo("MLP, SGD, 1500 steps of 64: test accuracy %.2f%%, loss %.4f", e.accuracy * 100, e.loss);
        QVERIFY2(e.accuracy >= 0.85, qPrintable(QString::number(e.accuracy)));
        QCOMPARE(e.samples, int64_t(10000));
    }

    // A root tests in batches whose largest tensor stays within 32 MiB; the figures do
    // not depend on the batch.
    void evaluationBatchesStaySmall()
    {
        const auto mlp = model::mlpSpec();
        QCOMPARE(train::evaluationBatch(mlp), int64_t(1000)); // 3 KiB a sample at most
        model::ModelSpec wide = model::cnnSpec();
        wide.layers[0].out = 64; // 64 x 28 x 28 floats: 196 KiB a sample
        wide.layers[3].in = 64;
        const int64_t batch = train::evaluationBatch(wide);
        QCOMPARE(batch, int64_t((32 << 20) / (64 * 28 * 28 * 4)));
        QCOMPARE(train::evaluationBatch(wide, 1024), int64_t(16)); // never below 16
        train::Trainer t(mlpConfig(), m_train);
        for (int i = 0; i < 50; ++i)
            t.step();
        const auto head = data::headOf(m_test, 1000);
        const auto whole = train::evaluateParameters(mlp, t.state().parameters, head, 1000);
        const auto small = train::evaluateParameters(mlp, t.state().parameters, head, 37);
        QCOMPARE(small.accuracy, whole.accuracy);
        QVERIFY(std::abs(small.loss - whole.loss) < 1e-5 * whole.loss);
    }

    void adamwTrainsToo()
    {
        train::Trainer t(mlpConfig(train::OptimizerKind::AdamW), m_train);
        for (int i = 0; i < 600; ++i)
            t.step();
        const auto e = t.evaluate(m_test);
        qInfo("MLP, AdamW, 600 steps: test accuracy %.2f%%", e.accuracy * 100);
        QVERIFY(e.accuracy >= 0.80);
    }

    void cnnTrains()
    {
        train::TrainerConfig c = mlpConfig();
        c.model = model::cnnSpec();
        train::Trainer t(c, m_train);
        double first = 0, last = 0;
        for (int i = 0; i < 300; ++i) {
            const double loss = t.step().loss;
            if (i < 20)
                first += loss / 20;
            if (i >= 280)
                last += loss / 20;
        }
        QVERIFY2(last < first * 0.6, qPrintable(QStringLiteral("%1 -> %2").arg(first).arg(last)));
        QVERIFY(t.evaluate(data::headOf(m_test, 2000)).accuracy > 0.7);
    }

    void sameSeedSameResult()
    {
        train::Trainer a(mlpConfig(), m_train), b(mlpConfig(), m_train);
        for (int i = 0; i < 20; ++i)
            QCOMPARE(a.step().loss, b.step().loss);
        QCOMPARE(a.state().parameters, b.state().parameters);
    }

    // A schedule sets the rate step by step (bench baselines follow the swarm's): at 0
    // the weights stay where they are although the momentum is not 0; the other trainer
    // of the same seed, at the job's rate, moves.
    void theRateCanChangeBetweenSteps()
    {
        train::Trainer held(mlpConfig(), m_train), moving(mlpConfig(), m_train);
        for (int i = 0; i < 5; ++i) {
            held.step();
            moving.step();
        }
        const auto before = held.state().parameters;
        QCOMPARE(moving.state().parameters, before);
        held.setLearningRate(0);
        for (int i = 0; i < 5; ++i) {
            held.step();
            moving.step();
        }
        QCOMPARE(held.state().parameters, before);
        QVERIFY(moving.state().parameters != before);
        QCOMPARE(held.state().optimizer.learningRate, 0.0);
    }

    // Acceptance: save then load is bit-exact for parameters and optimizer state, and
    // training continues identically.
    void stateRestoresBitExact_data()
    {
        QTest::addColumn<int>("kind");
        QTest::newRow("sgd") << int(train::OptimizerKind::Sgd);
        QTest::newRow("adamw") << int(train::OptimizerKind::AdamW);
    }

    void stateRestoresBitExact()
    {
        QFETCH(int, kind);
        const auto config = mlpConfig(train::OptimizerKind(kind));
        train::Trainer a(config, m_train);
        for (int i = 0; i < 30; ++i)
            a.step();
        const train::TrainingState saved = a.state();
        train::TrainerConfig other = config;
        other.seed = config.seed; // same settings, fresh weights from the same seed
        train::Trainer b(other, m_train);
        b.step(); // move b away from a's state first
        b.restore(saved);
        const auto restored = b.state();
        QCOMPARE(restored.parameters, saved.parameters);
        QCOMPARE(restored.optimizerState, saved.optimizerState);
        QCOMPARE(restored.cursor, saved.cursor);
        QCOMPARE(restored.step, saved.step);
        for (int i = 0; i < 10; ++i)
            QCOMPARE(b.step().loss, a.step().loss);
        QCOMPARE(b.state().parameters, a.state().parameters);
    }

    void restoreRejectsOtherModels()
    {
        train::Trainer a(mlpConfig(), m_train);
        a.step();
        const auto before = a.state();
        auto cnn = mlpConfig();
        cnn.model = model::cnnSpec();
        train::Trainer c(cnn, m_train);
        QVERIFY_THROWS_EXCEPTION(Error, a.restore(c.state()));
        train::TrainingState damaged = before;
        damaged.parameters[0].data.pop_back();
        QVERIFY_THROWS_EXCEPTION(Error, a.restore(damaged));
        train::TrainingState missing = before;
        missing.optimizerState.pop_back();
        QVERIFY_THROWS_EXCEPTION(Error, a.restore(missing));
        QCOMPARE(a.state().parameters, before.parameters); // nothing changed
    }

    void rejectsBadConfig()
    {
        auto c = mlpConfig();
        c.batchSize = 0;
        QVERIFY_THROWS_EXCEPTION(Error, train::Trainer(c, m_train));
        c = mlpConfig();
        c.optimizer.learningRate = -1;
        QVERIFY_THROWS_EXCEPTION(Error, train::Trainer(c, m_train));
        c = mlpConfig();
        c.model.input.dims = {3, 32, 32};
        QVERIFY_THROWS_EXCEPTION(Error, train::Trainer(c, m_train));
    }
};

QTEST_APPLESS_MAIN(TestTrainer)
#include "tst_trainer.moc"
