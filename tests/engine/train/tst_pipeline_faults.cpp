// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline under trouble: a slow stage, a stage that throws, a work gate that holds
// or closes, an abort from outside, malformed messages. Nothing may hang: every run is
// watched and must come back within a generous bound.
#include <QtTest>

#include <atomic>
#include <cstring>
#include <future>
#include <thread>

#include "engine/common/error.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/model/model_zoo.h"
#include "engine/train/in_process_transport.h"
#include "engine/train/pipeline.h"
#include "engine/train/stage_runtime.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

constexpr auto kWatchdog = 60s; // far beyond any of these runs; only a hang reaches it

std::vector<size_t> mlpCuts(int stages)
{
    switch (stages) {
    case 2:
        return {2};
    case 3:
        return {2, 4};
    case 4:
        return {2, 3, 4};
    default:
        return {};
    }
}

// Runs `work` on another thread; false if it did not finish within the watchdog's time
// (the pipeline is then aborted so that the test can end).
template <typename Work> bool returnsInTime(train::Pipeline &pipeline, Work work)
{
    auto done = std::async(std::launch::async, work);
    if (done.wait_for(kWatchdog) == std::future_status::ready)
        return true;
    pipeline.abort("watchdog");
    done.wait();
    return false;
}

// A gate that lets `open` microbatches through, then closes for good.
class ClosingGate final : public device::WorkGate
{
public:
    explicit ClosingGate(int open)
        : m_open(open)
    { }
    bool enter() override { return m_entered.fetch_add(1) < m_open; }
    void leave(std::chrono::nanoseconds) override { ++m_left; }
    int admitted() const { return std::min(m_entered.load(), m_open); }
    int left() const { return m_left; }

private:
    const int m_open;
    std::atomic<int> m_entered{0}, m_left{0};
};

// A gate that holds the `holdAt`th microbatch for `hold` (a pause), then lets all pass.
class PausingGate final : public device::WorkGate
{
public:
    PausingGate(int holdAt, std::chrono::milliseconds hold)
        : m_holdAt(holdAt)
        , m_hold(hold)
    { }
    bool enter() override
    {
        if (++m_entered == m_holdAt)
            std::this_thread::sleep_for(m_hold);
        return true;
    }
    void leave(std::chrono::nanoseconds) override { }

private:
    const int m_holdAt;
    const std::chrono::milliseconds m_hold;
    std::atomic<int> m_entered{0};
};

} // namespace

class TestPipelineFaults : public QObject
{
    Q_OBJECT

    std::shared_ptr<data::ImageDataset> m_train;

    train::PipelineConfig config(int stages)
    {
        train::PipelineConfig c;
        c.model = model::mlpSpec();
        c.cuts = mlpCuts(stages);
        c.microbatchSize = 32;
        return c;
    }

private Q_SLOTS:
    void initTestCase()
    {
        device::applyThreadConfig({1, 1});
        m_train = std::make_shared<data::ImageDataset>(
            data::headOf(data::loadFashionMnist(test::fashionMnistDir(), data::Split::Train), 4096));
    }

    // Acceptance: no deadlock when one stage is slow.
    void slowStageDoesNotDeadlock_data()
    {
        QTest::addColumn<int>("stages");
        QTest::addColumn<int>("slow");
        QTest::newRow("2 stages, slow root") << 2 << 0;
        QTest::newRow("2 stages, slow leaf") << 2 << 1;
        QTest::newRow("3 stages, slow middle") << 3 << 1;
        QTest::newRow("4 stages, slow root") << 4 << 0;
        QTest::newRow("4 stages, slow third") << 4 << 2;
    }

    void slowStageDoesNotDeadlock()
    {
        QFETCH(int, stages);
        QFETCH(int, slow);
        constexpr int64_t kMicrobatches = 40;
        auto c = config(stages);
        c.hook = [slow](int stage, int64_t, bool) {
            if (stage == slow)
                std::this_thread::sleep_for(3ms);
        };
        train::Pipeline pipeline(c, m_train);
        train::PipelineReport report;
        QVERIFY(returnsInTime(pipeline, [&] { report = pipeline.run(kMicrobatches); }));
        QVERIFY(report.finished);
        QCOMPARE(report.microbatches, kMicrobatches);
        for (const auto &s : report.stages) {
            QCOMPARE(s.forwards, kMicrobatches);
            QCOMPARE(s.backwards, kMicrobatches);
            QVERIFY(s.stalenessMax <= stages); // never more than the window, stages + 1, minus one
        }
        QVERIFY(report.stages[size_t(slow)].busySeconds >= 0.003 * kMicrobatches);
        QVERIFY(std::isfinite(report.meanLoss) && report.meanLoss > 0);
        // And the pipeline carries on after a slow run.
        QVERIFY(returnsInTime(pipeline, [&] { report = pipeline.run(5); }));
        QVERIFY(report.finished);
    }

    // Acceptance: a stage that fails stops the pipeline with a clear error, not a hang.
    void failingStageStopsThePipeline_data()
    {
        QTest::addColumn<int>("stages");
        QTest::addColumn<int>("failing");
        QTest::addColumn<int>("microbatch");
        QTest::addColumn<bool>("backward");
        QTest::addColumn<int>("slow");
        QTest::newRow("root, forward") << 2 << 0 << 3 << false << -1;
        QTest::newRow("root, backward") << 3 << 0 << 6 << true << -1;
        QTest::newRow("leaf") << 2 << 1 << 4 << false << -1;
        QTest::newRow("middle, backward") << 3 << 1 << 5 << true << -1;
        QTest::newRow("third of four, first microbatch") << 4 << 2 << 0 << false << -1;
        QTest::newRow("leaf while the root is slow") << 3 << 2 << 4 << false << 0;
        QTest::newRow("root while the leaf is slow") << 4 << 0 << 8 << true << 3;
    }

    void failingStageStopsThePipeline()
    {
        QFETCH(int, stages);
        QFETCH(int, failing);
        QFETCH(int, microbatch);
        QFETCH(bool, backward);
        QFETCH(int, slow);
        auto c = config(stages);
        c.hook = [=](int stage, int64_t id, bool isBackward) {
            if (stage == slow)
                std::this_thread::sleep_for(2ms);
            if (stage == failing && id == microbatch && isBackward == backward)
                throw std::runtime_error("injected failure at microbatch " + std::to_string(id));
        };
        train::Pipeline pipeline(c, m_train);
        QString error;
        QVERIFY(returnsInTime(pipeline, [&] {
            try {
                pipeline.run(100);
            } catch (const Error &e) {
                error = e.what();
            }
        }));
        QVERIFY2(error.contains(QStringLiteral("pipeline stage %1 ").arg(failing)), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("injected failure at microbatch %1").arg(microbatch)),
                 qPrintable(error));
        // A stopped pipeline says so instead of running again.
        QVERIFY_THROWS_EXCEPTION(Error, pipeline.run(1));
    }

    void closedGateWindsDownCleanly()
    {
        ClosingGate gate(25);
        train::Pipeline pipeline(config(3), m_train, gate);
        train::PipelineReport report;
        QVERIFY(returnsInTime(pipeline, [&] { report = pipeline.run(1000); }));
        QVERIFY(!report.finished);
        QCOMPARE(report.stop.kind, train::StopKind::Cancelled);
        QVERIFY2(QString::fromStdString(report.stop.reason).contains("work gate"), report.stop.reason.c_str());
        QCOMPARE(gate.left(), gate.admitted()); // every microbatch let in was reported done
        int64_t work = 0;
        for (const auto &s : report.stages)
            work += s.forwards + s.backwards - (s.stage == 2 ? s.forwards : 0);
        QCOMPARE(work, int64_t(gate.admitted()));
    }

    void pausedGateLosesNothing()
    {
        PausingGate gate(10, 200ms);
        train::Pipeline pipeline(config(2), m_train, gate);
        train::PipelineReport report;
        QVERIFY(returnsInTime(pipeline, [&] { report = pipeline.run(30); }));
        QVERIFY(report.finished);
        QCOMPARE(report.microbatches, int64_t(30));
        double waited = 0;
        for (const auto &s : report.stages)
            waited += s.waitSeconds;
        QVERIFY(waited >= 0.2);
    }

    void abortFromOutsideStopsARun()
    {
        auto c = config(3);
        c.hook = [](int, int64_t, bool) { std::this_thread::sleep_for(1ms); };
        train::Pipeline pipeline(c, m_train);
        train::PipelineReport report;
        std::thread stopper([&] {
            std::this_thread::sleep_for(200ms);
            pipeline.abort("stopped by the user");
        });
        const bool returned = returnsInTime(pipeline, [&] { report = pipeline.run(1'000'000); });
        stopper.join();
        QVERIFY(returned);
        QVERIFY(!report.finished);
        QCOMPARE(report.stop.kind, train::StopKind::Cancelled);
        QCOMPARE(report.stop.reason, std::string("stopped by the user"));
        QVERIFY(report.microbatches > 0);
    }

    // A networked stage gets bytes from strangers: bad messages fail the stage with a
    // message that says what was wrong.
    void malformedMessagesFailTheStage_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("expected");
        QTest::newRow("wrong shape") << 0 << "expected float32 Bx512";
        QTest::newRow("wrong type") << 1 << "expected float32 Bx512";
        QTest::newRow("label out of range") << 2 << "outside the model's 10 classes";
        QTest::newRow("labels for another batch") << 3 << "expected int64 of the batch's 4 samples";
        QTest::newRow("bytes that do not fill the shape") << 5 << "needs";
    }

    void malformedMessagesFailTheStage()
    {
        QFETCH(int, kind);
        QFETCH(QString, expected);
        // This thread plays the root of a real leaf.
        train::InProcessTransport transport(2, 4);
        train::StageRuntime stage(secondStage(2, 6), transport.endpoint(1));
        auto result = std::async(std::launch::async, [&] { return stage.run(0); });

        train::ForwardMessage f{0, 0, floats({4, 512}), labels({1, 2, 3, 4})};
        if (kind == 0)
            f.activations = floats({4, 500});
        if (kind == 1)
            f.activations = tensorBufferFromBytes(DType::Int64, {4, 512}, std::vector<uint8_t>(4 * 512 * 8, 0));
        if (kind == 2)
            f.labels = labels({1, 2, 10, 4});
        if (kind == 3)
            f.labels = labels({1, 2, 3});
        if (kind == 5)
            f.activations.shape = {5, 512};
        QVERIFY(transport.endpoint(0).sendForward(f));
        QVERIFY(result.wait_for(kWatchdog) == std::future_status::ready);
        const auto r = result.get();
        QCOMPARE(r.stop.kind, train::StopKind::Failed);
        QVERIFY2(QString::fromStdString(r.stop.reason).contains(expected), r.stop.reason.c_str());
        QVERIFY2(QString::fromStdString(r.stop.reason).startsWith("pipeline stage 1 (layers 2-"),
                 r.stop.reason.c_str());
        // The neighbours learn of it.
        QCOMPARE(std::get<train::StopMessage>(transport.endpoint(0).receive()).kind, train::StopKind::Failed);
    }

    // A gradient for a microbatch the stage holds no forward of (a neighbour's leftover
    // from before a restart, or a lie) is dropped and counted; it is not this stage's
    // failure, and the run goes on with the next microbatch.
    void strayGradientIsDropped()
    {
        // Three stages; this thread plays the root and the leaf around a real middle stage.
        train::InProcessTransport transport(3, 4);
        train::StageRuntime stage(secondStage(3, 4), transport.endpoint(1));
        auto result = std::async(std::launch::async, [&] { return stage.run(0); });

        QVERIFY(transport.endpoint(2).sendBackward({99, floats({4, 512}), {}}));
        QVERIFY(transport.endpoint(0).sendForward({0, 0, floats({4, 512}), labels({1, 2, 3, 4})}));
        const auto forward = transport.endpoint(2).receive();
        QVERIFY(std::holds_alternative<train::ForwardMessage>(forward));
        QCOMPARE(std::get<train::ForwardMessage>(forward).microbatch, int64_t(0));
        const auto &out = std::get<train::ForwardMessage>(forward).activations;
        QVERIFY(transport.endpoint(2).sendBackward({0, floats(out.shape), {}}));
        const auto backward = transport.endpoint(0).receive();
        QVERIFY(std::holds_alternative<train::BackwardMessage>(backward));
        QCOMPARE(std::get<train::BackwardMessage>(backward).microbatch, int64_t(0));
        QVERIFY(transport.endpoint(0).sendFinished());

        QVERIFY(result.wait_for(kWatchdog) == std::future_status::ready);
        const auto r = result.get();
        QCOMPARE(r.stop.kind, train::StopKind::Finished);
        QCOMPARE(r.metrics.strayGradients, int64_t(1));
        QCOMPARE(r.metrics.backwards, int64_t(1));
    }

private:
    // The MLP's second stage, from layer 2 to `lastLayer`, of a pipeline of `stages`.
    static train::StageConfig secondStage(int stages, size_t lastLayer)
    {
        train::StageConfig sc;
        sc.model = model::mlpSpec();
        sc.stage = 1;
        sc.stages = stages;
        sc.firstLayer = 2;
        sc.lastLayer = lastLayer;
        return sc;
    }
    static TensorBuffer floats(std::vector<int64_t> shape)
    {
        int64_t n = 1;
        for (auto d : shape)
            n *= d;
        return tensorBufferFromBytes(DType::Float32, shape, std::vector<uint8_t>(size_t(n) * 4, 0));
    }
    static TensorBuffer labels(std::vector<int64_t> values)
    {
        std::vector<uint8_t> bytes(values.size() * 8);
        std::memcpy(bytes.data(), values.data(), bytes.size());
        return tensorBufferFromBytes(DType::Int64, {int64_t(values.size())}, bytes);
    }
};

QTEST_APPLESS_MAIN(TestPipelineFaults)
#include "tst_pipeline_faults.moc"
