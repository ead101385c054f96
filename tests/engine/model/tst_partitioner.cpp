// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <functional>
#include <random>

#include "engine/common/error.h"
#include "engine/model/model_zoo.h"
#include "engine/model/partitioner.h"

using namespace rookery;
using model::LayerCost;
using model::StageDevice;

namespace {

constexpr double kGiga = 1e9;

// `count` layers with parameters, each of `flops` forward FLOPs.
std::vector<LayerCost> uniformLayers(int count, double flops = kGiga, int64_t parameters = 1000,
                                     int64_t activationBytes = 0)
{
    std::vector<LayerCost> costs(static_cast<size_t>(count));
    for (auto &c : costs) {
        c.parameters = parameters;
        c.forwardFlops = flops;
        c.activationBytes = activationBytes;
        c.savedBytes = activationBytes;
    }
    return costs;
}

std::vector<StageDevice> devices(const std::vector<double> &gflops, uint64_t memory = uint64_t(1) << 40)
{
    std::vector<StageDevice> out;
    for (double g : gflops)
        out.push_back({"d" + std::to_string(out.size()), g, memory});
    return out;
}

// Every cut of `layers` into `stages` non-empty contiguous stages.
void forEachCut(size_t layers, size_t stages, const std::function<void(const std::vector<size_t> &)> &visit,
                std::vector<size_t> prefix = {})
{
    if (prefix.size() + 1 == stages) {
        visit(prefix);
        return;
    }
    const size_t from = prefix.empty() ? 1 : prefix.back() + 1;
    for (size_t c = from; c + (stages - prefix.size() - 1) <= layers; ++c) {
        auto next = prefix;
        next.push_back(c);
        forEachCut(layers, stages, visit, next);
    }
}

// The smallest bottleneck of any cut that fits, by trying them all; infinity if none fits.
double bruteForceBottleneck(const std::vector<LayerCost> &costs, const std::vector<StageDevice> &d,
                            const model::PartitionOptions &options)
{
    double best = std::numeric_limits<double>::infinity();
    forEachCut(costs.size(), d.size(), [&](const std::vector<size_t> &cuts) {
        const auto p = model::evaluateCut(costs, d, options, cuts);
        if (p.fits())
            best = std::min(best, p.bottleneckSeconds());
    });
    return best;
}

} // namespace

class TestPartitioner : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void trainingFlopsSkipsUnneededInputGradients()
    {
        std::vector<LayerCost> costs(4);
        costs[0].forwardFlops = 10; // Flatten-like: nothing upstream to send a gradient to
        costs[1] = {100, 1000, {}, 0};
        costs[2].forwardFlops = 10; // ReLU after a layer with parameters
        costs[3] = {100, 1000, {}, 0};
        QCOMPARE(model::trainingFlops(costs, 0), 10.0);   // forward only
        QCOMPARE(model::trainingFlops(costs, 1), 2000.0); // forward + weight gradient
        QCOMPARE(model::trainingFlops(costs, 2), 20.0);   // forward + input gradient
        QCOMPARE(model::trainingFlops(costs, 3), 3000.0); // forward + both
    }

    // Acceptance: identical devices share the work evenly.
    void identicalDevicesSplitEvenly()
    {
        // Layer 0 costs 2 units (no input gradient), the others 3: [0,2) is 5, the rest 6.
        const auto costs = uniformLayers(8);
        const auto p = model::partitionLayers(costs, devices({1, 1, 1, 1}));
        QCOMPARE(p.cuts(), (std::vector<size_t>{2, 4, 6}));
        QCOMPARE(p.bottleneckSeconds(), 6.0);
        QVERIFY(p.bottleneck >= 1);
        QCOMPARE(p.stages[0].seconds, 5.0);
        QCOMPARE(p.bottleneckSeconds(), bruteForceBottleneck(costs, devices({1, 1, 1, 1}), {}));
    }

    // Acceptance: one device four times faster takes four times the work; Ravnest's equal
    // parameter shares leave the slow device the bottleneck.
    void fasterDeviceTakesMoreLayers()
    {
        const auto costs = uniformLayers(10);
        const auto d = devices({4, 1});
        const auto p = model::partitionLayers(costs, d);
        QCOMPARE(p.cuts(), std::vector<size_t>{8}); // 23 units at 4x vs 6 units at 1x
        QCOMPARE(p.bottleneckSeconds(), 6.0);
        QCOMPARE(p.bottleneck, size_t(1));
        const auto equal = model::evaluateCut(costs, d, {}, model::equalParameterCuts(costs, 2));
        QCOMPARE(equal.cuts(), std::vector<size_t>{5});
        QCOMPARE(equal.bottleneckSeconds(), 15.0);
        qInfo("fast + slow device: optimal %s; equal parameters %s (%.1fx slower)", p.describe().c_str(),
              equal.describe().c_str(), equal.bottleneckSeconds() / p.bottleneckSeconds());

        // The fast device in the middle of four.
        const auto d4 = devices({1, 4, 1, 1});
        const auto p4 = model::partitionLayers(uniformLayers(16), d4);
        QCOMPARE(p4.bottleneckSeconds(), bruteForceBottleneck(uniformLayers(16), d4, {}));
        QVERIFY(p4.stages[1].lastLayer - p4.stages[1].firstLayer >= 7);
        const auto e4 = model::evaluateCut(uniformLayers(16), d4, {}, model::equalParameterCuts(uniformLayers(16), 4));
        QVERIFY(e4.bottleneckSeconds() > 1.5 * p4.bottleneckSeconds());
    }

    // Acceptance: a device too small for any stage is named in the error.
    void deviceTooSmallForAnyStage()
    {
        const auto costs = uniformLayers(6);
        auto d = devices({1, 1, 1});
        d[1].name = "old laptop";
        d[1].memoryBytes = 1000; // one layer's 1000 parameters alone take 4000 bytes
        try {
            model::partitionLayers(costs, d);
            QFAIL("expected an error");
        } catch (const Error &e) {
            const QString message = e.what();
            QVERIFY2(message.contains("device 1") && message.contains("old laptop") && message.contains("too little"),
                     e.what());
        }
    }

    void memoryShapesTheCut()
    {
        // Each layer: 1000 parameters = 4000 bytes, x (weights + gradients + momentum +
        // the published copy) = 16000, plus a checkpoint's copy of weights and momentum
        // (8000): 24000 at the leaf; plus a stashed version per microbatch in flight (3
        // for 2 stages) and one more at the root: 40000 bytes per layer there. A root of
        // 80000 bytes holds two layers.
        const auto costs = uniformLayers(8);
        auto d = devices({1, 1});
        d[0].memoryBytes = 80000;
        const auto p = model::partitionLayers(costs, d);
        QCOMPARE(p.cuts(), std::vector<size_t>{2});
        QCOMPARE(p.stages[0].memoryBytes, uint64_t(80000));
        QCOMPARE(p.stages[1].memoryBytes, uint64_t(24000 * 6));
        QVERIFY(p.fits());
        // No device is to blame alone, but together they are too small.
        d[1].memoryBytes = 24000 * 5;
        QVERIFY_THROWS_EXCEPTION(Error, model::partitionLayers(costs, d));
    }

    void slowLinkCutsWhereActivationsAreSmall()
    {
        // Four equal layers; the output of layer 2 is small, the others large. By compute
        // alone the best cut is after layer 1 (5 vs 6 units); an upload from the first
        // device slow enough to outlast any stage's compute (which it overlaps: a stage
        // keeps pace with the slower of the two) moves it to where little has to be sent.
        auto costs = uniformLayers(4, kGiga, 1000, 1'000'000);
        costs[2].activationBytes = 1000;
        auto d = devices({1, 1});
        QCOMPARE(model::partitionLayers(costs, d).cuts(), std::vector<size_t>{2});
        d[0].linkBytesPerSecond = 2e4; // 50 s per megabyte
        const auto p = model::partitionLayers(costs, d);
        QCOMPARE(p.cuts(), std::vector<size_t>{3});
        QVERIFY(p.stages[0].transferSeconds < 0.1);
        QCOMPARE(p.stages[0].seconds, p.stages[0].computeSeconds); // the upload hides behind compute
        QCOMPARE(p.bottleneckSeconds(), bruteForceBottleneck(costs, d, {}));
    }

    // Two nodes on one machine as a real swarm measured them (2026-12-06): 96 and 103
    // GFLOP/s, uploads of 110 and 152 MB/s as the probe reads loopback through the
    // coordinator. Added up, compute and upload made the MLP's best cut a root of
    // nothing but the Flatten, its partner training everything (16.8k samples/s against
    // 21.1k cut in the middle); overlapped, the cut falls between the two Linears, and
    // each stage takes the slower of its compute and its upload, not their sum.
    void uploadsOverlappingComputeKeepTheMlpSplit()
    {
        const auto spec = model::mlpSpec();
        const auto costs = model::layerCosts(spec, 64);
        const auto options = model::partitionOptionsFor(spec, 64);
        for (const bool swapped : {false, true}) {
            std::vector<StageDevice> d{{"a", 103, uint64_t(1) << 32, 152e6}, {"b", 96, uint64_t(1) << 32, 110e6}};
            if (swapped)
                std::swap(d[0], d[1]);
            const auto p = model::partitionLayers(costs, d, options);
            QCOMPARE(p.cuts().size(), size_t(1));
            const size_t cut = p.cuts()[0];
            QVERIFY2(cut >= 2 && cut <= 3, std::to_string(cut).c_str()); // after the first Linear (or its ReLU)
            for (const auto &s : p.stages) {
                QVERIFY(s.transferSeconds > 0 && s.computeSeconds > 0);
                QCOMPARE(s.seconds, std::max(s.computeSeconds, s.transferSeconds));
            }
            QVERIFY(p.bottleneckSeconds() < model::evaluateCut(costs, d, options, {1}).bottleneckSeconds());
            // A link slower than the compute is what the stage then waits for.
            d[0].linkBytesPerSecond = 10e6;
            const auto slow = model::evaluateCut(costs, d, options, {cut});
            QVERIFY(slow.stages[0].transferSeconds > slow.stages[0].computeSeconds);
            QCOMPARE(slow.stages[0].seconds, slow.stages[0].transferSeconds);
        }
    }

    // The dynamic programme against trying every cut, on random problems.
    void optimalAgainstBruteForce()
    {
        std::mt19937_64 rng(7);
        auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
        int checked = 0, infeasible = 0;
        for (int trial = 0; trial < 300; ++trial) {
            const int layers = 2 + int(rng() % 9);
            const int stages = 1 + int(rng() % std::min(4, layers));
            std::vector<LayerCost> costs(static_cast<size_t>(layers));
            for (auto &c : costs) {
                c.parameters = rng() % 3 == 0 ? 0 : int64_t(uniform(100, 100000));
                c.forwardFlops = uniform(1e6, 1e9);
                c.activationBytes = int64_t(uniform(1e3, 1e7));
                c.savedBytes = int64_t(uniform(0, 2e7));
            }
            std::vector<StageDevice> d;
            for (int s = 0; s < stages; ++s)
                d.push_back({"", uniform(1, 100), uint64_t(uniform(1e6, 2e8)), uniform(1e6, 1e9)});
            model::PartitionOptions options;
            options.inputBytes = int64_t(uniform(1e3, 1e6));
            options.labelBytes = 512;
            const double expected = bruteForceBottleneck(costs, d, options);
            if (std::isinf(expected)) {
                QVERIFY_THROWS_EXCEPTION(Error, model::partitionLayers(costs, d, options));
                ++infeasible;
                continue;
            }
            const auto p = model::partitionLayers(costs, d, options);
            QVERIFY(p.fits());
            QVERIFY2(
                std::abs(p.bottleneckSeconds() - expected) <= 1e-12 * expected,
                qPrintable(QStringLiteral("trial %1: %2 vs %3").arg(trial).arg(p.bottleneckSeconds()).arg(expected)));
            const auto again = model::partitionLayers(costs, d, options); // deterministic
            QCOMPARE(again.cuts(), p.cuts());
            ++checked;
        }
        qInfo("%d random problems matched brute force, %d infeasible ones refused", checked, infeasible);
        QVERIFY(checked > 150 && infeasible > 0);
    }

    void equalParameterCutsFollowRavnest()
    {
        // Ten layers of equal size: shares 0.2/0.2/0.2/0.4 for four nodes.
        QCOMPARE(model::equalParameterCuts(uniformLayers(10), 4), (std::vector<size_t>{2, 4, 6}));
        // Six nodes: five shares of 0.2 leave the sixth nothing; it gets one layer.
        const auto six = model::equalParameterCuts(uniformLayers(10), 6);
        QCOMPARE(six, (std::vector<size_t>{2, 4, 6, 8, 9}));
        QCOMPARE(model::equalParameterCuts(uniformLayers(10), 2), std::vector<size_t>{5});
        // Layers without parameters stay with the open stage.
        const auto mlp = model::layerCosts(model::mlpSpec(), 64);
        QCOMPARE(model::equalParameterCuts(mlp, 2), std::vector<size_t>{2});
    }

    // The zoo's models: the optimal cut never predicts a slower bottleneck than equal
    // parameters, and does much better once devices differ. Figures go to docs/.
    void zooModelsAgainstEqualParameters_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QVector<double>>("gflops");
        for (const char *m : {"mlp", "cnn"}) {
            QTest::newRow(qPrintable(QStringLiteral("%1 2 equal").arg(m))) << QString(m) << QVector<double>{50, 50};
            QTest::newRow(qPrintable(QStringLiteral("%1 3 equal").arg(m))) << QString(m) << QVector<double>{50, 50, 50};
            QTest::newRow(qPrintable(QStringLiteral("%1 4 equal").arg(m)))
                << QString(m) << QVector<double>{50, 50, 50, 50};
            QTest::newRow(qPrintable(QStringLiteral("%1 2 last 4x").arg(m))) << QString(m) << QVector<double>{50, 200};
            QTest::newRow(qPrintable(QStringLiteral("%1 3 first 4x").arg(m)))
                << QString(m) << QVector<double>{200, 50, 50};
            QTest::newRow(qPrintable(QStringLiteral("%1 4 second 4x").arg(m)))
                << QString(m) << QVector<double>{50, 200, 50, 50};
        }
    }

    void zooModelsAgainstEqualParameters()
    {
        QFETCH(QString, model);
        QFETCH(QVector<double>, gflops);
        const auto spec = model::modelByName(model.toStdString());
        const auto costs = model::layerCosts(spec, 64);
        const auto options = model::partitionOptionsFor(spec, 64);
        auto d = devices(std::vector<double>(gflops.begin(), gflops.end()));
        for (auto &device : d)
            device.linkBytesPerSecond = 125e6; // 1 Gbit/s
        const auto p = model::partitionLayers(costs, d, options);
        const auto equal = model::evaluateCut(costs, d, options, model::equalParameterCuts(costs, d.size()));
        QStringList speeds;
        for (double g : gflops)
            speeds << QString::number(g);
        qInfo("%s on %s GFLOP/s: optimal %s; equal parameters %s; ratio %.2f", qPrintable(model),
              qPrintable(speeds.join('/')), p.describe().c_str(), equal.describe().c_str(),
              equal.bottleneckSeconds() / p.bottleneckSeconds());
        QVERIFY(p.bottleneckSeconds() <= equal.bottleneckSeconds() * (1 + 1e-12));
        QCOMPARE(p.bottleneckSeconds(), bruteForceBottleneck(costs, d, options));
    }

    void rejectsUnusableInput()
    {
        QVERIFY_THROWS_EXCEPTION(Error, model::partitionLayers(uniformLayers(2), devices({1, 1, 1})));
        QVERIFY_THROWS_EXCEPTION(Error, model::partitionLayers(uniformLayers(2), devices({})));
        QVERIFY_THROWS_EXCEPTION(Error, model::partitionLayers(uniformLayers(2), devices({1, 0})));
        auto d = devices({1, 1});
        d[0].linkBytesPerSecond = 0;
        QVERIFY_THROWS_EXCEPTION(Error, model::partitionLayers(uniformLayers(4), d));
        QVERIFY_THROWS_EXCEPTION(Error, model::evaluateCut(uniformLayers(4), devices({1, 1}), {}, {4}));
        QVERIFY_THROWS_EXCEPTION(Error, model::evaluateCut(uniformLayers(4), devices({1, 1, 1}), {}, {2, 2}));
    }
};

QTEST_APPLESS_MAIN(TestPartitioner)
#include "tst_partitioner.moc"
