// SPDX-License-Identifier: GPL-3.0-or-later
// What a swarm node needs of a pipeline stage beyond training: an update hook at safe
// points, its state for checkpoints, restoring it, and overwriting parameters (ring
// averaging, taking over layers).
#include <QtTest>

#include <atomic>
#include <thread>

#include "engine/common/error.h"
#include "engine/data/image_dataset.h"
#include "engine/device/work_gate.h"
#include "engine/model/model_zoo.h"
#include "engine/train/in_process_transport.h"
#include "engine/train/stage_runtime.h"
#include "tests/support/test_support.h"

using namespace rookery;

namespace {

train::StageConfig config(int stage, uint64_t seed = 5)
{
    train::StageConfig c;
    c.model = model::mlpSpec();
    c.firstLayer = stage == 0 ? 0 : 2;
    c.lastLayer = stage == 0 ? 2 : 6;
    c.stage = stage;
    c.stages = 2;
    c.optimizer.learningRate = 0.05;
    c.mode = train::PipelineMode::Synchronous;
    c.seed = seed;
    c.shard = {1, 2};
    return c;
}

// Two stages over an in-process transport, for `microbatches`.
struct TwoStages
{
    train::InProcessTransport transport{2, 8};
    train::StageRuntime root;
    train::StageRuntime leaf;
    TwoStages(std::shared_ptr<const data::ImageDataset> train, train::StageConfig c0, train::StageConfig c1,
              device::WorkGate &rootGate = train::openGate())
        : root(std::move(c0), transport.endpoint(0), rootGate, std::move(train))
        , leaf(std::move(c1), transport.endpoint(1))
    { }
    void run(int64_t microbatches)
    {
        std::thread t([&] { leaf.run(microbatches); });
        root.run(microbatches);
        t.join();
    }
};

// An open gate whose CPU share the test sets, as a governor's cap would.
class ShareGate final : public device::WorkGate
{
public:
    bool enter() override { return true; }
    void leave(std::chrono::nanoseconds) override { }
    double cpuShare() override { return share.load(); }
    std::atomic<double> share{1.0};
};

} // namespace

class TestStageState : public QObject
{
    Q_OBJECT

    std::shared_ptr<data::ImageDataset> m_train;

private Q_SLOTS:
    void initTestCase()
    {
        m_train = std::make_shared<data::ImageDataset>(
            data::headOf(data::loadFashionMnist(test::fashionMnistDir(), data::Split::Train), 4096));
    }

    void updateHookRunsOncePerStepOnTheStageThread()
    {
        std::vector<int64_t> versions;
        std::thread::id hookThread;
        auto c0 = config(0);
        c0.onUpdate = [&](int64_t v) {
            versions.push_back(v);
            hookThread = std::this_thread::get_id();
        };
        TwoStages s(m_train, c0, config(1));
        std::thread::id rootThread = std::this_thread::get_id();
        s.run(12);
        QCOMPARE(versions.size(), size_t(12));
        for (size_t i = 0; i < versions.size(); ++i)
            QCOMPARE(versions[i], int64_t(i + 1));
        QCOMPARE(hookThread, rootThread);
    }

    void restoredStagesContinueExactly()
    {
        TwoStages straight(m_train, config(0), config(1));
        straight.run(30);
        TwoStages first(m_train, config(0), config(1));
        first.run(12);
        const auto rootState = first.root.state();
        const auto leafState = first.leaf.state();
        QCOMPARE(rootState.step, int64_t(12));
        QCOMPARE(rootState.cursor.offset, int64_t(12 * 64)); // the root's data cursor travels
        TwoStages second(m_train, config(0), config(1));
        second.root.restore(rootState);
        second.leaf.restore(leafState);
        second.run(18);
        QCOMPARE(second.root.parameters(), straight.root.parameters());
        QCOMPARE(second.leaf.parameters(), straight.leaf.parameters());
        QCOMPARE(second.root.version(), int64_t(30));
    }

    // A stage's own time (the straggler check's measure) is its compute's CPU time over
    // its gate's CPU share: a wait inside the work that uses no CPU does not count, and a
    // cap of a quarter makes the same work count four times as long.
    void ownTimeIsComputeCpuOverTheGatesShare()
    {
        auto c0 = config(0);
        std::atomic<bool> sleepy{false};
        c0.hook = [&](int, int64_t, bool) {
            if (sleepy)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        };
        ShareGate gate;
        TwoStages s(m_train, c0, config(1), gate);
        s.run(10); // warm-up: first allocations

        sleepy = true;
        double before = s.root.ownSeconds();
        s.run(10); // 20 waits of 20 ms: 0.4 s of wall time with no CPU in it
        sleepy = false;
        const double sleptOwn = s.root.ownSeconds() - before;
        QVERIFY2(sleptOwn < 0.2, qPrintable(QString::number(sleptOwn)));

        before = s.root.ownSeconds();
        s.run(60);
        const double full = s.root.ownSeconds() - before;
        gate.share = 0.25;
        before = s.root.ownSeconds();
        s.run(60);
        const double quarter = s.root.ownSeconds() - before;
        QVERIFY(full > 0);
        qInfo("60 microbatches: %.4f s own time at a share of 1, %.4f s at 0.25 (ratio %.2f)", full, quarter,
              quarter / full);
        // The same work: 4x, give or take what CPU time varies by between two runs.
        QVERIFY2(quarter > 2.5 * full && quarter < 6.4 * full,
                 qPrintable(QStringLiteral("%1 s at 1, %2 s at 0.25").arg(full).arg(quarter)));
    }

    void restoreRefusesAnotherStage()
    {
        TwoStages s(m_train, config(0), config(1));
        const auto before = s.root.parameters();
        QVERIFY_THROWS_EXCEPTION(Error, s.root.restore(s.leaf.state()));
        auto other = s.root.state();
        other.optimizer.learningRate = 0.5;
        QVERIFY_THROWS_EXCEPTION(Error, s.root.restore(other));
        QCOMPARE(s.root.parameters(), before);
    }

    void setParametersChecksFirst()
    {
        TwoStages s(m_train, config(0), config(1));
        const auto before = s.root.parameters();
        auto p = before;
        std::fill(p[0].data.begin(), p[0].data.end(), uint8_t(0));
        auto bad = p;
        bad.push_back(NamedTensor{"9.weight", DType::Float32, {1}, std::vector<uint8_t>(4)});
        QVERIFY_THROWS_EXCEPTION(Error, s.root.setParameters(bad));
        QCOMPARE(s.root.parameters(), before);
        auto misshapen = p;
        misshapen[1].shape = {1};
        misshapen[1].data.resize(4);
        QVERIFY_THROWS_EXCEPTION(Error, s.root.setParameters(misshapen));
        QCOMPARE(s.root.parameters(), before);
        s.root.setParameters({p[0]}); // a subset is fine: a ring averages a layer range
        QCOMPARE(s.root.parameters()[0], p[0]);
        QCOMPARE(s.root.parameters()[1], before[1]);
    }
};

QTEST_APPLESS_MAIN(TestStageState)
#include "tst_stage_state.moc"
