// SPDX-License-Identifier: GPL-3.0-or-later
// The root tests the pipeline's model by sending its test set through the stages
// (StageConfig::test): the result is the whole model's, as if its weights had been
// gathered in one place; the final test sees what every stage's onFinishing did; a
// test beside training does not disturb it and keeps three batches in flight; a leaf
// whose tally does not fit the batch is refused; a stop during the final test still
// ends the run Finished.
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/model/model_zoo.h"
#include "engine/train/evaluate.h"
#include "engine/train/in_process_transport.h"
#include "engine/train/stage_runtime.h"
#include "tests/support/test_support.h"

using namespace rookery;

namespace {

// A stage's link that passes everything through, with a look at each message on its
// way: what the links below change or count.
class LookingTransport : public train::StageTransport
{
public:
    explicit LookingTransport(train::StageTransport &inner)
        : m_inner(inner)
    { }
    bool sendForward(train::ForwardMessage m) override
    {
        sendingForward(m);
        return m_inner.sendForward(std::move(m));
    }
    bool sendBackward(train::BackwardMessage m) override
    {
        sendingBackward(m);
        return m_inner.sendBackward(std::move(m));
    }
    bool sendFinished() override { return m_inner.sendFinished(); }
    train::StageMessage receive() override
    {
        auto m = m_inner.receive();
        received(m);
        return m;
    }
    std::optional<train::StageMessage> poll() override
    {
        auto m = m_inner.poll();
        if (m)
            received(*m);
        return m;
    }
    void abort(train::StopMessage reason) override { m_inner.abort(std::move(reason)); }

protected:
    virtual void sendingForward(train::ForwardMessage &) { }
    virtual void sendingBackward(train::BackwardMessage &) { }
    virtual void received(const train::StageMessage &) { }

private:
    train::StageTransport &m_inner;
};

// A follower's link that calls `seen` on the stage's thread when the first batch of a
// numbered test reaches it, before the stage runs it.
class TestWatchingTransport final : public LookingTransport
{
public:
    TestWatchingTransport(train::StageTransport &inner, std::function<void()> seen)
        : LookingTransport(inner)
        , m_seen(std::move(seen))
    { }

private:
    void received(const train::StageMessage &m) override
    {
        if (const auto *f = std::get_if<train::ForwardMessage>(&m); f && f->evaluation && f->testId != m_last) {
            m_last = f->testId;
            if (f->testId != 0)
                m_seen();
        }
    }
    std::function<void()> m_seen;
    int64_t m_last = 0;
};

// A leaf's link that does `tweak` to every tally it sends.
class TallyTweakingTransport final : public LookingTransport
{
public:
    TallyTweakingTransport(train::StageTransport &inner, std::function<void(train::EvaluationTally &)> tweak)
        : LookingTransport(inner)
        , m_tweak(std::move(tweak))
    { }

private:
    void sendingBackward(train::BackwardMessage &m) override
    {
        if (m.tally)
            m_tweak(*m.tally);
    }
    std::function<void(train::EvaluationTally &)> m_tweak;
};

// The root's link, counting the batches of tests beside training sent and not yet
// answered; the most at once in `most`.
class InFlightCountingTransport final : public LookingTransport
{
public:
    InFlightCountingTransport(train::StageTransport &inner, size_t &most)
        : LookingTransport(inner)
        , m_most(most)
    { }

private:
    void sendingForward(train::ForwardMessage &m) override
    {
        if (m.evaluation && m.testId != 0)
            m_most = std::max(m_most, ++m_inFlight);
    }
    void received(const train::StageMessage &m) override
    {
        if (const auto *b = std::get_if<train::BackwardMessage>(&m); b && b->tally && m_inFlight > 0)
            --m_inFlight;
    }
    size_t &m_most;
    size_t m_inFlight = 0;
};

struct Outcome
{
    std::vector<train::StageRunResult> results;
    std::vector<train::EvaluationResult> evaluations; // in the order the root reported them
    std::vector<NamedTensor> parameters;              // every stage's, after the run
    std::vector<std::string> events;                  // "finishing <stage>", "final test"
    /// Every stage's parameters when the test beside training reached it (the root's
    /// when it began), in stage order.
    std::vector<std::vector<NamedTensor>> atTest;
    std::vector<std::vector<NamedTensor>> consensus; // what each stage was given, in stage order
    size_t testBatchesInFlight = 0; // the most batches of a test beside training the root had unanswered
};

bool everyStageHas(const std::vector<std::vector<NamedTensor>> &byStage)
{
    return std::none_of(byStage.begin(), byStage.end(), [](const auto &stage) { return stage.empty(); });
}

// The stages' parameters in one list: the whole model's.
std::vector<NamedTensor> joined(const std::vector<std::vector<NamedTensor>> &byStage)
{
    std::vector<NamedTensor> all;
    for (const auto &stage : byStage)
        all.insert(all.end(), stage.begin(), stage.end());
    return all;
}

// Every float32 value halved: weights no stage trained to, easy to tell apart.
std::vector<NamedTensor> halved(std::vector<NamedTensor> p)
{
    for (auto &t : p)
        for (size_t i = 0; i + 4 <= t.data.size(); i += 4) {
            float v;
            std::memcpy(&v, t.data.data() + i, 4);
            v *= 0.5f;
            std::memcpy(t.data.data() + i, &v, 4);
        }
    return p;
}

struct Options
{
    int64_t microbatches = 40;
    int64_t testAtStep = 0;               // the root asks for a test beside training at this step
    bool miscountingLeaf = false;         // the leaf's tallies count one sample too many
    bool leafAbortsWhenFinishing = false; // the leaf's onFinishing stops the pipeline
    int64_t evaluationBatch = 300;        // the test set is 1,000: the last batch is short
    int64_t consensusAtStep = 0;          // every stage is given a consensus (its weights halved) at this step
    int64_t dropConsensusAtStep = 0;      // and drops it at this one
    int64_t testAgainAtStep = 0;          // the root asks for another test at this step
    bool slowTallies = false;             // the leaf takes 20 ms over every tally it sends
};

} // namespace

class TestPipelineEvaluation : public QObject
{
    Q_OBJECT

    std::shared_ptr<data::ImageDataset> m_train, m_test;

    // The MLP cut at `bounds` ({0, 2, 4, 6}: three stages), trained for a few microbatches.
    Outcome run(const std::vector<size_t> &bounds, const Options &o = {})
    {
        const int stages = int(bounds.size()) - 1;
        // The window and the root's test batches in flight (3).
        train::InProcessTransport transport(stages, size_t(stages + 4));
        // One sample more in every tally: an answer that does not fit.
        TallyTweakingTransport miscounting(transport.endpoint(stages - 1),
                                           [](train::EvaluationTally &t) { ++t.samples; });
        Outcome out;
        out.atTest.resize(size_t(stages));
        out.consensus.resize(size_t(stages));
        std::mutex mutex;
        std::vector<std::unique_ptr<train::StageRuntime>> runtimes;
        runtimes.resize(size_t(stages));
        std::vector<std::unique_ptr<TestWatchingTransport>> watching;
        for (int s = 0; s < stages; ++s)
            watching.push_back(std::make_unique<TestWatchingTransport>(
                transport.endpoint(s), [&, s] { out.atTest[size_t(s)] = runtimes[size_t(s)]->parameters(); }));
        InFlightCountingTransport counting(transport.endpoint(0), out.testBatchesInFlight);
        // 20 ms over every tally: a slow link, or a far one.
        TallyTweakingTransport slowLeaf(*watching[size_t(stages) - 1], [](train::EvaluationTally &) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        });
        const auto linkOf = [&](int s) -> train::StageTransport & {
            if (s == stages - 1 && o.miscountingLeaf)
                return miscounting;
            if (s == stages - 1 && o.slowTallies)
                return slowLeaf;
            if (s > 0)
                return *watching[size_t(s)];
            return counting;
        };
        for (int s = 0; s < stages; ++s) {
            train::StageConfig c;
            c.model = model::mlpSpec();
            c.firstLayer = bounds[size_t(s)];
            c.lastLayer = bounds[size_t(s) + 1];
            c.stage = s;
            c.stages = stages;
            c.microbatchSize = 32;
            c.finalEvaluation = true;
            c.evaluationBatch = o.evaluationBatch;
            c.onFinishing = [&, s] {
                std::lock_guard lock(mutex);
                out.events.push_back("finishing " + std::to_string(s));
                if (s == stages - 1) {
                    // What a last averaging round would do: change the weights the final test must see.
                    runtimes[size_t(s)]->setParameters(halved(runtimes[size_t(s)]->parameters()));
                    if (o.leafAbortsWhenFinishing)
                        transport.abort({train::StopKind::Cancelled, s, "the leaf went away"});
                }
            };
            if (s == 0) {
                c.test = m_test;
                c.onEvaluated = [&](const train::EvaluationResult &r) {
                    std::lock_guard lock(mutex);
                    out.evaluations.push_back(r);
                    if (r.final)
                        out.events.push_back("final test");
                };
            }
            c.onUpdate = [&, s](int64_t version) {
                auto &runtime = *runtimes[size_t(s)];
                if (version == o.consensusAtStep) { // what an averaging round agreed on
                    auto agreed = halved(runtime.parameters());
                    runtime.setConsensus(agreed, version);
                    std::lock_guard lock(mutex);
                    out.consensus[size_t(s)] = std::move(agreed);
                }
                if (version == o.dropConsensusAtStep)
                    runtime.dropConsensus();
                if (s == 0 && version == o.testAtStep) {
                    out.atTest[0] = runtime.parameters(); // the test begins before the next step
                    runtime.requestEvaluation();
                }
                if (s == 0 && version == o.testAgainAtStep)
                    runtime.requestEvaluation();
            };
            runtimes[size_t(s)] =
                std::make_unique<train::StageRuntime>(c, linkOf(s), train::openGate(), s == 0 ? m_train : nullptr);
        }
        out.results.resize(size_t(stages));
        std::vector<std::thread> threads;
        for (int s = 0; s < stages; ++s)
            threads.emplace_back([&, s] { out.results[size_t(s)] = runtimes[size_t(s)]->run(o.microbatches); });
        for (auto &t : threads)
            t.join();
        for (const auto &r : runtimes)
            for (auto &p : r->parameters())
                out.parameters.push_back(std::move(p));
        return out;
    }

    // The final test's figures against the whole model's, gathered in one place.
    void compareWithGathered(const Outcome &out)
    {
        const auto &final = out.evaluations.back();
        QVERIFY(final.final);
        QVERIFY2(final.failure.empty(), final.failure.c_str());
        QCOMPARE(final.tally.samples, m_test->count);
        const auto whole = train::evaluateParameters(model::mlpSpec(), out.parameters, *m_test, 1000);
        qInfo("through the pipeline: %.2f%%, loss %.5f; gathered: %.2f%%, loss %.5f", final.accuracy() * 100,
              final.loss(), whole.accuracy * 100, whole.loss);
        QVERIFY(std::abs(final.accuracy() - whole.accuracy) <= 2.0 / double(m_test->count));
        QVERIFY(std::abs(final.loss() - whole.loss) <= 1e-4 * std::max(1.0, whole.loss));
    }

private Q_SLOTS:
    void initTestCase()
    {
        device::applyThreadConfig({1, 1});
        m_train = std::make_shared<data::ImageDataset>(
            data::headOf(data::loadFashionMnist(test::fashionMnistDir(), data::Split::Train), 2048));
        m_test = std::make_shared<data::ImageDataset>(
            data::headOf(data::loadFashionMnist(test::fashionMnistDir(), data::Split::Test), 1000));
    }

    void theFinalTestIsTheWholeModelsAfterEveryStageFinished_data()
    {
        QTest::addColumn<std::vector<size_t>>("bounds");
        QTest::newRow("one stage") << std::vector<size_t>{0, 6};
        QTest::newRow("two stages") << std::vector<size_t>{0, 2, 6};
        QTest::newRow("three stages") << std::vector<size_t>{0, 2, 4, 6};
    }
    void theFinalTestIsTheWholeModelsAfterEveryStageFinished()
    {
        QFETCH(std::vector<size_t>, bounds);
        const Outcome out = run(bounds);
        for (const auto &r : out.results)
            QCOMPARE(int(r.stop.kind), int(train::StopKind::Finished));
        QCOMPARE(out.evaluations.size(), size_t(1));
        compareWithGathered(out);
        // Every stage finished (its last averaging) before the root tested.
        QCOMPARE(out.events.size(), bounds.size());
        QCOMPARE(out.events.back(), std::string("final test"));
        // Training went on as before: every microbatch came back.
        QCOMPARE(out.results[0].metrics.backwards, int64_t(40));
    }

    void aTestBesideTrainingReportsTheWholeTestSet()
    {
        Options o;
        o.microbatches = 60;
        o.testAtStep = 10;
        const Outcome out = run({0, 2, 4, 6}, o);
        QCOMPARE(out.evaluations.size(), size_t(2));
        const auto &beside = out.evaluations.front();
        QVERIFY(!beside.final);
        QVERIFY2(beside.failure.empty(), beside.failure.c_str());
        QCOMPARE(beside.version, int64_t(10));
        QCOMPARE(beside.tally.samples, m_test->count);
        QVERIFY(beside.accuracy() > 0.3); // ten steps of the MLP are already far above chance
        QCOMPARE(out.results[0].metrics.backwards, int64_t(60));
        QCOMPARE(out.results[2].metrics.forwards, int64_t(60)); // test batches are not training
        compareWithGathered(out);
    }

    // Training goes on while the test's batches pass, one at a time: without care each
    // stage would test with whatever weights it has by then. The result is the whole
    // model's as each stage held it when the test reached it (the root when it began).
    void aTestBesideTrainingMeasuresTheModelOfOneMoment()
    {
        Options o;
        o.microbatches = 80;
        o.testAtStep = 10;
        o.evaluationBatch = 50; // 20 batches, training in between
        const Outcome out = run({0, 2, 4, 6}, o);
        QCOMPARE(out.evaluations.size(), size_t(2));
        const auto &beside = out.evaluations.front();
        QVERIFY2(beside.failure.empty(), beside.failure.c_str());
        QCOMPARE(beside.version, int64_t(10));
        QCOMPARE(beside.tally.samples, m_test->count);
        QVERIFY(everyStageHas(out.atTest)); // every stage saw the test
        const auto atTest = joined(out.atTest);
        const auto then = train::evaluateParameters(model::mlpSpec(), atTest, *m_test, 1000);
        const auto after = train::evaluateParameters(model::mlpSpec(), out.parameters, *m_test, 1000);
        qInfo("beside training: %.2f%%, loss %.5f; the model when the test reached each stage: %.2f%%, loss %.5f; "
              "at the end: loss %.5f",
              beside.accuracy() * 100, beside.loss(), then.accuracy * 100, then.loss, after.loss);
        QVERIFY(std::abs(after.loss - then.loss) > 1e-3); // training did move the weights on
        QVERIFY(std::abs(beside.accuracy() - then.accuracy) <= 2.0 / double(m_test->count));
        QVERIFY(std::abs(beside.loss() - then.loss) <= 1e-4 * std::max(1.0, then.loss));
        compareWithGathered(out); // and the final test is the end's model, not the kept one
    }

    // Over a slow or far link a test waited out a round trip per batch; the root keeps a
    // few in flight beside training, and no more.
    void aTestBesideTrainingKeepsThreeBatchesInFlight()
    {
        Options o;
        o.microbatches = 200;
        o.testAtStep = 10;
        o.evaluationBatch = 100; // 10 batches
        o.slowTallies = true;
        const Outcome out = run({0, 2, 6}, o);
        QCOMPARE(out.evaluations.size(), size_t(2));
        const auto &beside = out.evaluations.front();
        QVERIFY2(beside.failure.empty(), beside.failure.c_str());
        QCOMPARE(beside.tally.samples, m_test->count);
        QCOMPARE(out.testBatchesInFlight, size_t(3));
        QCOMPARE(out.results[0].metrics.backwards, int64_t(200));
    }

    // Where clusters average, each drifts from what they agreed for the interval's steps;
    // the swarm's model is the agreement, and tests beside training measure that: the
    // weights of the last round at every stage, reported at the round's step. Once a
    // stage drops it (alone in its rings), tests take its current weights again.
    void aTestBesideTrainingMeasuresTheConsensus_data()
    {
        QTest::addColumn<std::vector<size_t>>("bounds");
        QTest::newRow("one stage") << std::vector<size_t>{0, 6};
        QTest::newRow("three stages") << std::vector<size_t>{0, 2, 4, 6};
    }
    void aTestBesideTrainingMeasuresTheConsensus()
    {
        QFETCH(std::vector<size_t>, bounds);
        Options o;
        o.microbatches = 80; // as many as the test of one moment takes to finish beside them
        o.consensusAtStep = 8;
        o.testAtStep = 10;
        o.evaluationBatch = 50; // 20 batches, training in between
        const Outcome out = run(bounds, o);
        QCOMPARE(out.evaluations.size(), size_t(2));
        const auto &beside = out.evaluations.front();
        QVERIFY2(beside.failure.empty(), beside.failure.c_str());
        QCOMPARE(beside.version, int64_t(8));
        QVERIFY(beside.consensus);
        QVERIFY(!out.evaluations.back().consensus); // the final test: the current weights
        QCOMPARE(beside.tally.samples, m_test->count);
        QVERIFY(everyStageHas(out.consensus)); // every stage was given one before the test reached it
        QVERIFY(everyStageHas(out.atTest));
        const auto expected = train::evaluateParameters(model::mlpSpec(), joined(out.consensus), *m_test, 1000);
        // What each stage held when the test reached it.
        const auto current = train::evaluateParameters(model::mlpSpec(), joined(out.atTest), *m_test, 1000);
        qInfo("beside training: %.2f%%, loss %.5f; the consensus: %.2f%%, loss %.5f; the current weights: loss %.5f",
              beside.accuracy() * 100, beside.loss(), expected.accuracy * 100, expected.loss, current.loss);
        QVERIFY(std::abs(current.loss - expected.loss) > 1e-3); // the two models differ
        QVERIFY(std::abs(beside.accuracy() - expected.accuracy) <= 2.0 / double(m_test->count));
        QVERIFY(std::abs(beside.loss() - expected.loss) <= 1e-4 * std::max(1.0, expected.loss));
        compareWithGathered(out); // the final test is the end's model
    }

    // Between rounds the consensus does not change: a second request tests nothing new.
    void aSecondTestOfTheSameConsensusIsDropped()
    {
        Options o;
        o.microbatches = 60;
        o.consensusAtStep = 8;
        o.testAtStep = 10;
        o.testAgainAtStep = 30; // long after the first test ended (a single stage tests at once)
        const Outcome out = run({0, 6}, o);
        QCOMPARE(out.evaluations.size(), size_t(2)); // the first test and the final one
        QCOMPARE(out.evaluations.front().version, int64_t(8));
        QVERIFY(out.evaluations.back().final);
        // Without a consensus each request is a test of its own moment.
        o.consensusAtStep = 0;
        const Outcome plain = run({0, 6}, o);
        QCOMPARE(plain.evaluations.size(), size_t(3));
        QCOMPARE(plain.evaluations[0].version, int64_t(10));
        QCOMPARE(plain.evaluations[1].version, int64_t(30));
    }

    void aDroppedConsensusLeavesTestsToTheCurrentWeights()
    {
        Options o;
        o.microbatches = 60;
        o.consensusAtStep = 6;
        o.dropConsensusAtStep = 8;
        o.testAtStep = 10;
        const Outcome out = run({0, 6}, o);
        QCOMPARE(out.evaluations.size(), size_t(2));
        const auto &beside = out.evaluations.front();
        QVERIFY2(beside.failure.empty(), beside.failure.c_str());
        QCOMPARE(beside.version, int64_t(10));
        QVERIFY(!beside.consensus);
        const auto now = train::evaluateParameters(model::mlpSpec(), out.atTest[0], *m_test, 1000);
        const auto agreed = train::evaluateParameters(model::mlpSpec(), out.consensus[0], *m_test, 1000);
        QVERIFY(std::abs(now.loss - agreed.loss) > 1e-3); // the two models differ
        QVERIFY(std::abs(beside.loss() - now.loss) <= 1e-4 * std::max(1.0, now.loss));
    }

    void aTallyThatDoesNotFitTheBatchIsRefused()
    {
        Options o;
        o.miscountingLeaf = true;
        const Outcome out = run({0, 2, 6}, o);
        QCOMPARE(out.evaluations.size(), size_t(1));
        const auto &final = out.evaluations.back();
        QVERIFY(final.final);
        QVERIFY2(final.failure.find("answered a test batch of 300 samples") != std::string::npos,
                 final.failure.c_str());
        QCOMPARE(final.tally.samples, int64_t(0));
        for (const auto &r : out.results)
            QCOMPARE(int(r.stop.kind), int(train::StopKind::Finished));
    }

    void aStopDuringTheFinalTestStillEndsTheRunFinished()
    {
        Options o;
        o.leafAbortsWhenFinishing = true;
        const Outcome out = run({0, 2, 4, 6}, o);
        QCOMPARE(out.evaluations.size(), size_t(1));
        QVERIFY2(out.evaluations.back().failure.find("the leaf went away") != std::string::npos,
                 out.evaluations.back().failure.c_str());
        for (const auto &r : out.results)
            QCOMPARE(int(r.stop.kind), int(train::StopKind::Finished));
    }
};

QTEST_GUILESS_MAIN(TestPipelineEvaluation)
#include "tst_pipeline_evaluation.moc"
