// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/stage_runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <optional>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/data/epoch_sampler.h"
#include "engine/device/process_usage.h"
#include "engine/train/batch_source.h"
#include "engine/train/pipeline_window.h"
#include "engine/train/stage_compute.h"
#include "engine/train/stage_transport.h"
#include "engine/train/torch_convert.h"

namespace rookery::train {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Test batches are numbered apart from the training microbatches of a run.
constexpr int64_t kFirstTestBatch = int64_t(1) << 38;
// Test batches the root keeps in flight. One at a time, each batch waited out a round
// trip and the training queued ahead of it: over 50 Mbit/s links at 50 ms a test of the
// MLP took 200-300 steps of training, so a swarm tested one round in two or three.
constexpr size_t kTestBatchesInFlight = 3;

// The leaf's answer to a test batch.
EvaluationTally tallyOf(const torch::Tensor &logits, const torch::Tensor &labels)
{
    namespace F = torch::nn::functional;
    EvaluationTally t;
    t.samples = labels.size(0);
    t.lossSum = F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
    t.correct = logits.argmax(1).eq(labels).sum().item<int64_t>();
    return t;
}

void addTally(EvaluationTally &into, const EvaluationTally &t)
{
    into.samples += t.samples;
    into.correct += t.correct;
    into.lossSum += t.lossSum;
}

void checkConfig(const StageConfig &c)
{
    model::validate(c.model);
    validate(c.optimizer);
    if (c.stages < 1 || c.stage < 0 || c.stage >= c.stages)
        throw Error("pipeline stage " + std::to_string(c.stage) + " of " + std::to_string(c.stages) +
                    " does not exist");
    if (c.firstLayer >= c.lastLayer || c.lastLayer > c.model.layers.size())
        throw Error("pipeline stage " + std::to_string(c.stage) + " has the empty or invalid layer range [" +
                    std::to_string(c.firstLayer) + ", " + std::to_string(c.lastLayer) + ")");
    if ((c.stage == 0) != (c.firstLayer == 0) || (c.stage == c.stages - 1) != (c.lastLayer == c.model.layers.size()))
        throw Error("pipeline stage " + std::to_string(c.stage) + " must " +
                    (c.stage == 0 ? "start at the first layer" : "end at the last layer"));
    if (c.microbatchSize < 1 || c.accumulation < 1 || c.maxInFlight < 0 || c.maxWindow < 0)
        throw Error("microbatch size and accumulation must be at least 1");
    if (c.evaluationBatch < 1)
        throw Error("the test batch must hold at least one sample");
}

} // namespace

int StageConfig::window() const
{
    if (mode == PipelineMode::Synchronous)
        return 1;
    return maxInFlight > 0 ? maxInFlight : stages + 1;
}

std::vector<std::pair<std::string, double>> StageMetrics::namedValues() const
{
    return {{"forwards", double(forwards)},
            {"backwards", double(backwards)},
            {"updates", double(updates)},
            {"busy_s", busySeconds},
            {"wait_s", waitSeconds},
            {"staleness_mean", meanStaleness()},
            {"staleness_max", double(stalenessMax)},
            {"window", double(window)},
            {"loss_mean", meanLoss()},
            {"seconds_per_microbatch", secondsPerMicrobatch()},
            {"stray_gradients", double(strayGradients)}};
}

device::WorkGate &openGate()
{
    static device::OpenGate gate;
    return gate;
}

struct StageRuntime::Impl
{
    Impl(StageConfig c, StageTransport &t, device::WorkGate &g, std::shared_ptr<const data::ImageDataset> train)
        : config(std::move(c))
        , transport(t)
        , gate(g)
        , compute(config.model, config.firstLayer, config.lastLayer, config.seed, config.optimizer, config.accumulation,
                  config.predictWeights && config.mode == PipelineMode::Asynchronous,
                  config.scaleRateByStaleness && config.mode == PipelineMode::Asynchronous)
        , dataset(std::move(train))
    {
        if (config.stage == 0) {
            if (!dataset || dataset->count < config.microbatchSize)
                throw Error("the root stage needs training data of at least one microbatch");
            source = std::make_unique<BatchSource>(dataset);
            sampler = std::make_unique<data::EpochSampler>(dataset->count, config.seed, config.shard);
        }
    }

    bool root() const { return config.stage == 0; }
    bool leaf() const { return config.stage == config.stages - 1; }
    std::string name() const
    {
        return "pipeline stage " + std::to_string(config.stage) + " (layers " + std::to_string(config.firstLayer) +
               "-" + std::to_string(config.lastLayer - 1) + ")";
    }

    StopMessage abort(StopKind kind, std::string reason)
    {
        StopMessage stop{kind, config.stage, name() + ": " + std::move(reason)};
        transport.abort(stop);
        return stop;
    }

    // Passes the gate, runs `work` and accounts for it. False when the gate closed.
    template <typename Work> bool step(int64_t microbatch, bool backward, Work &&work)
    {
        const auto waitStart = Clock::now();
        if (!gate.enter())
            return false;
        const double heldFor = secondsSince(waitStart);
        metrics.waitSeconds += heldFor;
        // Own time is the thread's CPU time over the gate's CPU share: what the work
        // takes under this node's cap, but not what other processes take from it. Wall
        // time read another program's load on the machine as a slow stage (the test
        // suite beside four capped nodes flagged healthy ones), and a hold measured on
        // the wall clock shrinks under such load (the ledger sees less CPU used).
        const auto start = Clock::now();
        const auto cpuStart = device::threadCpuTime();
        struct Leave
        {
            device::WorkGate &gate;
            Clock::time_point start;
            std::chrono::nanoseconds cpuStart;
            double &busy;
            std::atomic<double> &own;
            ~Leave()
            {
                const auto spent = Clock::now() - start;
                busy += std::chrono::duration<double>(spent).count();
                const double cpu = std::chrono::duration<double>(device::threadCpuTime() - cpuStart).count();
                own.store(own.load(std::memory_order_relaxed) + cpu / gate.cpuShare(), std::memory_order_relaxed);
                gate.leave(std::chrono::duration_cast<std::chrono::nanoseconds>(spent));
            }
        } leave{gate, start, cpuStart, metrics.busySeconds, liveOwn};
        if (config.hook)
            config.hook(config.stage, microbatch, backward);
        work();
        return true;
    }

    StageMessage receive()
    {
        const auto start = Clock::now();
        StageMessage m = transport.receive();
        metrics.waitSeconds += secondsSince(start);
        return m;
    }

    // The stop every stage sees once a send failed because the pipeline was aborted.
    StopMessage stopAfterFailedSend() { return std::get<StopMessage>(transport.receive()); }

    void noteBackward(int64_t staleness, bool stepped)
    {
        ++metrics.backwards;
        metrics.stalenessSum += staleness;
        metrics.stalenessMax = std::max(metrics.stalenessMax, staleness);
        liveStaleness.store(metrics.meanStaleness(), std::memory_order_relaxed);
        if (stepped)
            ++metrics.updates;
    }

    // Root: the window for the next forward (WindowSizer); the fixed one elsewhere.
    int sizeWindow(int fixed) const
    {
        if (config.mode != PipelineMode::Asynchronous)
            return fixed;
        return windowSizer.size(fixed, metrics.secondsPerMicrobatch(), config.stages, config.maxWindow);
    }

    // Calls the update hook once per optimizer step, at the top of a loop, when the
    // previous iteration's messages are out.
    void afterUpdates()
    {
        if (config.onUpdate && compute.version() != hookedVersion) {
            hookedVersion = compute.version();
            config.onUpdate(hookedVersion);
        }
    }

    StopMessage runRoot(int64_t microbatches);
    StopMessage runSingle(int64_t microbatches);
    StopMessage runFollower();
    bool forwardFromData(int64_t id, ForwardMessage &out);
    void handleForward(const ForwardMessage &in, StageMessage &out);
    void handleTestForward(const ForwardMessage &in, StageMessage &out);

    // The root's test of the pipeline (StageConfig::test).
    struct Test
    {
        bool active = false;
        bool final = false;
        bool consensus = false;
        int64_t id = 0; // numbered from 1 while the root lives; 0 for the final test (training is over)
        int64_t version = 0;
        int64_t next = 0, end = 0;                          // samples of the test set
        std::deque<std::pair<int64_t, int64_t>> unanswered; // batches sent: id, samples
        EvaluationTally tally;
    };
    bool startTest(bool final);
    bool forwardTestBatch(ForwardMessage &out); // false when the gate closed
    void takeTally(const BackwardMessage &b);
    void endTest(std::string failure, bool refused = false);
    bool testLocally(); // a pipeline of one stage; false when the gate closed
    void runFinalTest();
    void handleBackward(const BackwardMessage &in, std::optional<BackwardMessage> &out);
    /// A gradient for a microbatch this stage holds no forward of: counted, logged (the
    /// first few, then one in a hundred) and dropped; the run goes on.
    bool stray(const BackwardMessage &b);

    StageConfig config;
    StageTransport &transport;
    device::WorkGate &gate;
    StageCompute compute;
    std::shared_ptr<const data::ImageDataset> dataset;
    std::unique_ptr<BatchSource> source;
    std::unique_ptr<data::EpochSampler> sampler;
    StageMetrics metrics;
    std::atomic<double> lastLoss{0}; // the leaf's newest loss, for progress reports during a run
    std::atomic<double> liveStaleness{0};
    std::atomic<double> liveOwn{
        0}; // compute CPU time over the gate's share, since built (one writer: the stage thread)
    std::atomic<int> liveWindow{0};
    WindowSizer windowSizer; // root: round trips and arrival gaps, for the window
    int64_t hookedVersion = 0;
    std::atomic<bool> testRequested{false};
    Test test;
    std::unique_ptr<BatchSource> testSource; // while a test runs
    int64_t nextTestBatch = kFirstTestBatch;
    int64_t testsStarted = 0;     // root: numbers its periodic tests
    int64_t keptTest = 0;         // follower: the test whose weights compute keeps (0: none)
    int64_t testedConsensus = -1; // root: the consensus version its last periodic test measured
};

bool StageRuntime::Impl::startTest(bool final)
{
    if (!config.test || config.test->count < 1)
        return false;
    // The consensus changes once a round: a second test of the same one would print the
    // same figures and cost the link the test set again.
    if (!final && compute.holdsConsensus() && compute.consensusVersion() == testedConsensus)
        return false;
    test = Test{};
    test.active = true;
    test.final = final;
    // Beside training, every stage tests with the weights of the moment the test
    // reaches it (ForwardMessage::testId), the root with those of now: where the swarm
    // averages, the consensus of the last round (setConsensus), and the test is of the
    // version that round came after. The final test comes after the last step (and the
    // last round): the current weights, and not an abandoned test's.
    const bool consensus = !final && compute.holdsConsensus();
    test.version = consensus ? compute.consensusVersion() : compute.version();
    test.consensus = consensus;
    if (consensus)
        testedConsensus = test.version;
    compute.releaseKept();
    if (!final && config.stages > 1)
        test.id = ++testsStarted;
    if (!final && (config.stages > 1 || consensus))
        compute.keepForTest();
    test.end = config.test->count;
    testSource = std::make_unique<BatchSource>(config.test);
    return true;
}

bool StageRuntime::Impl::forwardTestBatch(ForwardMessage &out)
{
    const int64_t id = nextTestBatch++;
    return step(id, false, [&] {
        const int64_t n = std::min(config.evaluationBatch, test.end - test.next);
        Batch batch = testSource->slice(test.next, n);
        out.microbatch = id;
        out.weightVersion = compute.version();
        out.activations = toBuffer(compute.inferKept(batch.images));
        out.labels = toBuffer(batch.labels);
        out.evaluation = true;
        out.testId = test.id;
        out.testLast = test.next + n >= test.end;
        test.unanswered.emplace_back(id, n);
        test.next += n;
    });
}

void StageRuntime::Impl::takeTally(const BackwardMessage &b)
{
    // Answers to a test that ended (abandoned, or refused) are late: dropped.
    if (!test.active || test.unanswered.empty() || test.unanswered.front().first != b.microbatch)
        return;
    const int64_t expected = test.unanswered.front().second;
    test.unanswered.pop_front();
    const EvaluationTally &t = *b.tally;
    if (t.samples != expected || t.correct < 0 || t.correct > t.samples || !std::isfinite(t.lossSum) || t.lossSum < 0)
        return endTest("the last stage answered a test batch of " + std::to_string(expected) + " samples with " +
                           std::to_string(t.correct) + " of " + std::to_string(t.samples) + " right and a loss of " +
                           std::to_string(t.lossSum),
                       true);
    addTally(test.tally, t);
    if (test.unanswered.empty() && test.next >= test.end)
        endTest({});
}

void StageRuntime::Impl::endTest(std::string failure, bool refused)
{
    EvaluationResult r{test.version, test.final, test.tally, std::move(failure), refused, test.consensus};
    test.active = false;
    test.unanswered.clear();
    testSource.reset();
    compute.releaseKept();
    if (config.onEvaluated)
        config.onEvaluated(r);
}

bool StageRuntime::Impl::testLocally()
{
    while (test.next < test.end) {
        const int64_t id = nextTestBatch++;
        const bool ok = step(id, false, [&] {
            const int64_t n = std::min(config.evaluationBatch, test.end - test.next);
            Batch batch = testSource->slice(test.next, n);
            addTally(test.tally, tallyOf(compute.inferKept(batch.images), batch.labels));
            test.next += n;
        });
        if (!ok) {
            endTest("the work gate closed");
            return false;
        }
    }
    endTest({});
    return true;
}

// After the last step and the root's onFinishing: the whole test set down the pipeline,
// kTestBatchesInFlight at once, the other stages having finished first (they serve it after
// their own onFinishing).
void StageRuntime::Impl::runFinalTest()
{
    if (!startTest(true))
        return;
    while (test.active) {
        if (test.unanswered.size() < kTestBatchesInFlight && test.next < test.end) {
            ForwardMessage f;
            if (!forwardTestBatch(f))
                return endTest("the work gate closed");
            if (!transport.sendForward(std::move(f)))
                return endTest(stopAfterFailedSend().reason);
            continue;
        }
        StageMessage m = receive();
        if (const auto *stop = std::get_if<StopMessage>(&m))
            return endTest(stop->reason);
        if (const auto *b = std::get_if<BackwardMessage>(&m); b && b->tally)
            takeTally(*b);
    }
}

bool StageRuntime::Impl::forwardFromData(int64_t id, ForwardMessage &out)
{
    return step(id, false, [&] {
        Batch batch = source->gather(sampler->next(config.microbatchSize));
        out.microbatch = id;
        out.weightVersion = compute.version();
        out.activations = toBuffer(compute.forward(id, batch.images));
        out.labels = toBuffer(batch.labels);
        ++metrics.forwards;
    });
}

void StageRuntime::Impl::handleForward(const ForwardMessage &in, StageMessage &out)
{
    const torch::Tensor input = fromBuffer(in.activations);
    if (leaf()) {
        auto r = compute.trainLeaf(input, fromBuffer(in.labels));
        ++metrics.forwards;
        metrics.lossSum += r.loss;
        metrics.lastLoss = r.loss;
        lastLoss.store(r.loss, std::memory_order_relaxed);
        BackwardMessage b{in.microbatch, {}};
        if (r.inputGradient.defined())
            b.gradient = toBuffer(r.inputGradient);
        out = std::move(b);
        return;
    }
    ForwardMessage f{in.microbatch, compute.version(), toBuffer(compute.forward(in.microbatch, input)), in.labels};
    ++metrics.forwards;
    out = std::move(f);
}

void StageRuntime::Impl::handleTestForward(const ForwardMessage &in, StageMessage &out)
{
    // A numbered test's batches all meet the weights this stage held when its first
    // arrived; an unnumbered one (the final test, or an older root's) the current ones.
    if (in.testId == 0) {
        compute.releaseKept();
        keptTest = 0;
    } else if (in.testId != keptTest || !compute.keepsForTest()) {
        compute.keepForTest();
        keptTest = in.testId;
    }
    const torch::Tensor output = compute.inferKept(fromBuffer(in.activations));
    if (in.testLast) {
        compute.releaseKept();
        keptTest = 0;
    }
    if (leaf()) {
        out = BackwardMessage{in.microbatch, {}, tallyOf(output, fromBuffer(in.labels))};
        return;
    }
    ForwardMessage f;
    f.microbatch = in.microbatch;
    f.weightVersion = compute.version();
    f.activations = toBuffer(output);
    f.labels = in.labels;
    f.evaluation = true;
    f.testId = in.testId;
    f.testLast = in.testLast;
    out = std::move(f);
}

bool StageRuntime::Impl::stray(const BackwardMessage &b)
{
    if (compute.holds(b.microbatch))
        return false;
    if (++metrics.strayGradients <= 3 || metrics.strayGradients % 100 == 0)
        log::warning("pipeline", "stage " + std::to_string(config.stage) + ": dropped a gradient for microbatch " +
                                     std::to_string(b.microbatch) + ", which this stage holds no forward of (" +
                                     std::to_string(metrics.strayGradients) + " dropped this run)");
    return true;
}

void StageRuntime::Impl::handleBackward(const BackwardMessage &in, std::optional<BackwardMessage> &out)
{
    const int64_t before = compute.version();
    auto r = compute.backward(in.microbatch, in.gradient.empty() || in.gradient.bytes == 0 ? torch::Tensor()
                                                                                           : fromBuffer(in.gradient));
    noteBackward(r.staleness, compute.version() != before);
    if (!root()) {
        out = BackwardMessage{in.microbatch, {}};
        if (r.inputGradient.defined())
            out->gradient = toBuffer(r.inputGradient);
    }
}

StopMessage StageRuntime::Impl::runSingle(int64_t microbatches)
{
    for (int64_t id = 0; id < microbatches; ++id) {
        // Alone, this stage hears of a stop (its session ending) only through the transport.
        if (auto m = transport.poll(); m && std::holds_alternative<StopMessage>(*m))
            return std::get<StopMessage>(*m);
        const bool ok = step(id, false, [&] {
            Batch batch = source->gather(sampler->next(config.microbatchSize));
            const int64_t before = compute.version();
            auto r = compute.trainLeaf(batch.images, batch.labels);
            ++metrics.forwards;
            metrics.lossSum += r.loss;
            metrics.lastLoss = r.loss;
            lastLoss.store(r.loss, std::memory_order_relaxed);
            noteBackward(0, compute.version() != before);
        });
        if (!ok)
            return abort(StopKind::Cancelled, "the work gate closed");
        afterUpdates();
        if (testRequested.exchange(false) && startTest(false) && !testLocally())
            return abort(StopKind::Cancelled, "the work gate closed");
    }
    if (compute.flush())
        ++metrics.updates;
    afterUpdates();
    if (config.finalEvaluation) {
        if (config.onFinishing)
            config.onFinishing();
        if (startTest(true))
            (void)testLocally();
    }
    return {StopKind::Finished, config.stage, {}};
}

StopMessage StageRuntime::Impl::runRoot(int64_t microbatches)
{
    const int fixed = config.window();
    int window = fixed;
    liveWindow.store(window, std::memory_order_relaxed);
    metrics.window = window;
    windowSizer.reset();
    int64_t next = 0, done = 0;
    test = Test{}; // answers to a test of an earlier run never come
    while (done < microbatches) {
        afterUpdates();
        if (!test.active && testRequested.exchange(false))
            startTest(false);
        // Test batches beside training, beyond the window.
        const bool testBatch = test.active && test.unanswered.size() < kTestBatchesInFlight && test.next < test.end;
        std::optional<StageMessage> m;
        if ((int64_t(compute.inFlight()) < window && next < microbatches) || testBatch) {
            m = transport.poll(); // backward work first, if any is waiting
            if (!m) {
                ForwardMessage f;
                if (!(testBatch ? forwardTestBatch(f) : forwardFromData(next, f)))
                    return abort(StopKind::Cancelled, "the work gate closed");
                if (!testBatch)
                    ++next;
                if (!transport.sendForward(std::move(f)))
                    return stopAfterFailedSend();
                if (!testBatch)
                    windowSizer.sent(Clock::now());
                continue;
            }
        } else {
            m = receive();
        }
        if (auto *stop = std::get_if<StopMessage>(&*m))
            return *stop;
        const auto *b = std::get_if<BackwardMessage>(&*m);
        if (!b)
            throw Error("the root received a forward message");
        if (b->tally) {
            takeTally(*b);
            continue;
        }
        if (stray(*b))
            continue;
        windowSizer.arrived(Clock::now()); // backwards come back in the order of their forwards
        std::optional<BackwardMessage> none;
        if (!step(b->microbatch, true, [&] { handleBackward(*b, none); }))
            return abort(StopKind::Cancelled, "the work gate closed");
        ++done;
        window = sizeWindow(fixed);
        metrics.window = window;
        liveWindow.store(window, std::memory_order_relaxed);
    }
    test.active = false; // a periodic test still going is dropped: the final one follows
    if (compute.flush())
        ++metrics.updates;
    afterUpdates();
    if (!transport.sendFinished())
        return stopAfterFailedSend();
    if (config.finalEvaluation) {
        if (config.onFinishing)
            config.onFinishing();
        runFinalTest();
        (void)transport.sendFinished(); // the end of the test; the run is complete either way
    }
    return {StopKind::Finished, config.stage, {}};
}

StopMessage StageRuntime::Impl::runFollower()
{
    // After the first Finished (StageConfig::finalEvaluation) the run has trained to its
    // end: whatever stops the root's test, the run ends Finished.
    bool finishing = false;
    const auto ended = [&](StopMessage stop) {
        return finishing ? StopMessage{StopKind::Finished, config.stage, {}} : stop;
    };
    for (;;) {
        afterUpdates();
        StageMessage m = receive();
        if (auto *stop = std::get_if<StopMessage>(&m)) {
            if (stop->kind == StopKind::Finished) {
                if (compute.flush())
                    ++metrics.updates;
                afterUpdates();
                if (!leaf() && !transport.sendFinished())
                    return ended(stopAfterFailedSend());
                if (config.finalEvaluation && !finishing) {
                    finishing = true;
                    if (config.onFinishing)
                        config.onFinishing();
                    continue; // serve the root's test until its second Finished
                }
            }
            return ended(*stop);
        }
        if (auto *f = std::get_if<ForwardMessage>(&m); f && f->evaluation) {
            StageMessage out;
            if (!step(f->microbatch, false, [&] { handleTestForward(*f, out); }))
                return ended(abort(StopKind::Cancelled, "the work gate closed"));
            const bool sent = std::holds_alternative<BackwardMessage>(out)
                                  ? transport.sendBackward(std::move(std::get<BackwardMessage>(out)))
                                  : transport.sendForward(std::move(std::get<ForwardMessage>(out)));
            if (!sent)
                return ended(stopAfterFailedSend());
            continue;
        }
        if (auto *b = std::get_if<BackwardMessage>(&m); b && b->tally) {
            if (!transport.sendBackward(std::move(*b))) // a test's answer, on its way to the root
                return ended(stopAfterFailedSend());
            continue;
        }
        if (finishing)
            continue; // no training after the end
        if (auto *f = std::get_if<ForwardMessage>(&m)) {
            StageMessage out;
            const int64_t before = compute.version();
            if (!step(f->microbatch, false, [&] { handleForward(*f, out); }))
                return abort(StopKind::Cancelled, "the work gate closed");
            if (auto *b = std::get_if<BackwardMessage>(&out)) {
                noteBackward(0, compute.version() != before);
                if (!transport.sendBackward(std::move(*b)))
                    return stopAfterFailedSend();
            } else if (!transport.sendForward(std::move(std::get<ForwardMessage>(out)))) {
                return stopAfterFailedSend();
            }
            continue;
        }
        const auto &b = std::get<BackwardMessage>(m);
        if (stray(b))
            continue;
        std::optional<BackwardMessage> out;
        if (!step(b.microbatch, true, [&] { handleBackward(b, out); }))
            return abort(StopKind::Cancelled, "the work gate closed");
        if (out && !transport.sendBackward(std::move(*out)))
            return stopAfterFailedSend();
    }
}

StageRuntime::StageRuntime(StageConfig config, StageTransport &transport, device::WorkGate &gate,
                           std::shared_ptr<const data::ImageDataset> train)
{
    checkConfig(config);
    d = std::make_unique<Impl>(std::move(config), transport, gate, std::move(train));
}

StageRuntime::~StageRuntime() = default;

StageRunResult StageRuntime::run(int64_t microbatches)
{
    d->metrics = StageMetrics{};
    d->metrics.stage = d->config.stage;
    d->liveStaleness.store(0, std::memory_order_relaxed);
    d->compute.dropInFlight(); // what an aborted run left in flight will never come back
    d->compute.releaseKept();  // and the test it was running will not go on
    d->keptTest = 0;
    d->hookedVersion = d->compute.version();
    StopMessage stop;
    try {
        device::applyThreadConfig(d->config.threads);
        if (d->root() && d->leaf())
            stop = d->runSingle(microbatches);
        else
            stop = d->root() ? d->runRoot(microbatches) : d->runFollower();
    } catch (const c10::Error &e) {
        stop = d->abort(StopKind::Failed, e.what_without_backtrace());
    } catch (const std::exception &e) {
        stop = d->abort(StopKind::Failed, e.what());
    }
    d->compute.releaseKept();
    d->keptTest = 0;
    return {d->metrics, stop};
}

void StageRuntime::requestEvaluation() { d->testRequested = true; }

TensorBuffer StageRuntime::infer(const TensorBuffer &input) { return toBuffer(d->compute.infer(fromBuffer(input))); }

std::vector<NamedTensor> StageRuntime::parameters() const { return d->compute.parameters(); }

void StageRuntime::setParameters(const std::vector<NamedTensor> &parameters) { d->compute.setParameters(parameters); }

void StageRuntime::setConsensus(const std::vector<NamedTensor> &weights, int64_t version)
{
    d->compute.setConsensus(weights, version);
}

void StageRuntime::dropConsensus() { d->compute.dropConsensus(); }

TrainingState StageRuntime::state() const
{
    TrainingState s;
    s.model = d->config.model;
    s.optimizer = d->config.optimizer;
    s.batchSize = d->config.microbatchSize;
    s.seed = d->config.seed;
    s.step = d->compute.version();
    if (d->sampler)
        s.cursor = d->sampler->cursor();
    s.parameters = d->compute.parameters();
    s.optimizerState = d->compute.optimizerState();
    return s;
}

void StageRuntime::restore(const TrainingState &s)
{
    if (!(s.model == d->config.model))
        throw Error("the checkpoint is for model '" + s.model.name + "', this stage trains '" + d->config.model.name +
                    "'");
    if (!(s.optimizer == d->config.optimizer) || s.batchSize != d->config.microbatchSize)
        throw Error("the checkpoint was trained with other settings (optimizer or microbatch size)");
    const auto mine = d->compute.parameters();
    if (s.parameters.size() != mine.size())
        throw Error("the checkpoint holds " + std::to_string(s.parameters.size()) + " parameters, this stage " +
                    std::to_string(mine.size()) + " (another layer range?)");
    if (d->sampler)
        data::EpochSampler(*d->sampler).setCursor(s.cursor); // validates the cursor
    d->compute.setParameters(s.parameters);                  // validates, then copies
    try {
        d->compute.restoreOptimizer(s.optimizerState); // validates, then copies
    } catch (...) {
        d->compute.setParameters(mine); // leave the stage as it was
        throw;
    }
    if (d->sampler)
        d->sampler->setCursor(s.cursor);
}

double StageRuntime::lastLoss() const { return d->lastLoss.load(std::memory_order_relaxed); }

int StageRuntime::window() const { return d->liveWindow.load(std::memory_order_relaxed); }

double StageRuntime::meanStaleness() const { return d->liveStaleness.load(std::memory_order_relaxed); }

double StageRuntime::ownSeconds() const { return d->liveOwn.load(std::memory_order_relaxed); }

int64_t StageRuntime::version() const { return d->compute.version(); }

void StageRuntime::setLearningRate(double lr) { d->compute.setLearningRate(lr); }

const StageConfig &StageRuntime::config() const { return d->config; }

} // namespace rookery::train
