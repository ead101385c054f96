// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/common/tensor_buffer.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/device/work_gate.h"
#include "engine/model/model_spec.h"
#include "engine/train/optimizer_config.h"
#include "engine/train/stage_message.h"
#include "engine/train/training_state.h"

namespace rookery::train {

class StageTransport;

enum class PipelineMode {
    Asynchronous, ///< the root keeps up to stages + 1 microbatches in flight
    Synchronous,  ///< one microbatch in flight: the unsplit model's arithmetic, for checking
};

/// Called on a stage's thread before each microbatch's forward or backward, after the
/// work gate let it through: tests inject delays and failures with it.
using StageHook = std::function<void(int stage, int64_t microbatch, bool backward)>;

/// Called on a stage's thread after its optimizer stepped, at a safe point: the
/// messages of that step are sent and no microbatch is being computed. The callee may
/// use the runtime's parameters(), setParameters() and state() (a swarm node averages
/// over its rings and checkpoints here). `version` is the optimizer steps so far.
using UpdateHook = std::function<void(int64_t version)>;

/// A test of the pipeline's model that the root ran (StageRuntime::requestEvaluation,
/// StageConfig::finalEvaluation).
struct EvaluationResult
{
    int64_t version = 0; ///< the root's optimizer steps when it began (of its consensus, where it held one)
    bool final = false;  ///< the test after the last step (and the stages' onFinishing)
    EvaluationTally tally;
    /// Why it did not complete ("" when it did): the pipeline stopped, or the leaf's
    /// answer did not fit the batch. `tally` then holds what came back.
    std::string failure;
    bool refused = false; ///< the failure is an answer that did not fit its batch
    /// It measured the consensus of the last averaging round (setConsensus): the model
    /// every cluster of the swarm held after that round, not this cluster's own drift.
    bool consensus = false;

    double accuracy() const { return tally.samples > 0 ? double(tally.correct) / double(tally.samples) : 0; }
    double loss() const { return tally.samples > 0 ? tally.lossSum / double(tally.samples) : 0; }
};

/// Called on the root's stage thread when a test of the pipeline ends.
using EvaluationHook = std::function<void(const EvaluationResult &)>;

/// One stage of a pipeline. Every stage of a pipeline gets the same settings except
/// `stage`, `firstLayer` and `lastLayer`.
struct StageConfig
{
    model::ModelSpec model; ///< the whole model
    size_t firstLayer = 0;  ///< this stage's layers: [firstLayer, lastLayer)
    size_t lastLayer = 0;
    int stage = 0; ///< 0 is the root (reads the data), stages - 1 the leaf (computes the loss)
    int stages = 1;
    OptimizerConfig optimizer;
    int64_t microbatchSize = 64;
    int accumulation = 1; ///< the optimizer steps after this many backwards
    PipelineMode mode = PipelineMode::Asynchronous;
    int maxInFlight = 0; ///< the root's window; 0 = stages + 1 (asynchronous) or 1
    /// Asynchronous root over a network: when above window(), the window follows the
    /// measured round trip and stage time (pipelineWindow()) between window() and this
    /// cap on microbatches in flight, which bounds staleness. 0: the window stays fixed.
    int maxWindow = 0;
    bool predictWeights = true; ///< asynchronous: forward on the weights the gradient will meet
    /// Asynchronous: each step's rate scaled by its gradients' staleness (staleRateScale).
    bool scaleRateByStaleness = true;
    uint64_t seed = 1; ///< weights and data order, as the unsplit Trainer's
    device::ThreadConfig threads{1, 1};
    StageHook hook;
    UpdateHook onUpdate;
    data::Shard shard; ///< the root reads this shard of the data (a swarm cluster's own)

    /// Testing through the pipeline: the root sends its test set down in batches of
    /// `evaluationBatch` samples, forward only, a few batches in flight beside training;
    /// each stage uses its own current weights (or its consensus), and the leaf answers with a tally. No stage
    /// ever holds another's weights. The root's test set (null: it cannot test).
    std::shared_ptr<const data::ImageDataset> test;
    int64_t evaluationBatch = 256;
    EvaluationHook onEvaluated; ///< root
    /// Every stage alike: after the last step the run goes on for a final test. Each
    /// stage passes Finished on, calls onFinishing (a swarm node's last averaging round
    /// and checkpoint) and then serves the root's test batches; the root, after its own
    /// onFinishing, tests the pipeline and ends the run with a second Finished. Once a
    /// stage saw the first Finished its run ends Finished, however the test goes.
    bool finalEvaluation = false;
    std::function<void()> onFinishing;

    /// The root's window as it will be used.
    int window() const;
};

/// What one stage did in one run, as plain values.
struct StageMetrics
{
    int stage = 0;
    int64_t forwards = 0;
    int64_t backwards = 0;
    int64_t updates = 0;      ///< optimizer steps
    double busySeconds = 0;   ///< computing, per the work gate's accounting
    double waitSeconds = 0;   ///< blocked on the transport or the work gate
    int64_t stalenessSum = 0; ///< over backwards: optimizer steps since their forward
    int64_t stalenessMax = 0;
    int window = 0;     ///< root: microbatches in flight allowed at the end of the run
    double lossSum = 0; ///< leaf: sum of microbatch losses
    double lastLoss = 0;
    /// Gradients for microbatches this stage holds no forward of, dropped: a neighbour's
    /// leftovers from before a restart, or a lie; neither is this stage's failure.
    int64_t strayGradients = 0;

    double meanStaleness() const { return backwards > 0 ? double(stalenessSum) / double(backwards) : 0; }
    double meanLoss() const { return backwards > 0 ? lossSum / double(backwards) : 0; }
    /// Busy seconds per microbatch (forward and backward together).
    double secondsPerMicrobatch() const { return backwards > 0 ? busySeconds / double(backwards) : 0; }
    std::vector<std::pair<std::string, double>> namedValues() const;
};

struct StageRunResult
{
    StageMetrics metrics;
    StopMessage stop; ///< how the run ended, as this stage saw it
};

/// A process-wide OpenGate: the default for runs nobody governs.
device::WorkGate &openGate();

/// One stage of an asynchronous pipeline: what a networked node runs for its stage, and
/// what the in-process Pipeline runs on each of its threads. Roles follow the position:
/// the root reads the data and keeps the window of microbatches in flight, a middle
/// stage passes activations down and gradients up, the leaf computes the loss. Every
/// stage prefers backward work to forward work, and passes the work gate before each
/// forward or backward; when the gate refuses, the stage aborts the pipeline as
/// Cancelled. A stage that throws aborts it as Failed with its error.
///
/// Thread safety: run() on one thread at a time; parameters(), infer() and version()
/// only while it does not run.
class StageRuntime
{
public:
    /// `train` is read by the root only. Throws rookery::Error for bad settings.
    StageRuntime(StageConfig config, StageTransport &transport, device::WorkGate &gate = openGate(),
                 std::shared_ptr<const data::ImageDataset> train = {});
    ~StageRuntime();
    StageRuntime(const StageRuntime &) = delete;
    StageRuntime &operator=(const StageRuntime &) = delete;

    /// Trains until the run ends: the root feeds `microbatches`, waits for all to come
    /// back and sends Finished down; other stages ignore the count and stop at Finished
    /// or an abort. Applies the thread configuration first. Never throws: failures abort
    /// the pipeline and come back in the result.
    StageRunResult run(int64_t microbatches);

    /// Root: test the pipeline's model at the next chance, once no test is going (from
    /// the update hook, say). Results come to StageConfig::onEvaluated. A request that
    /// would test the consensus the last test measured (setConsensus) is dropped. Any
    /// thread.
    void requestEvaluation();

    /// This stage's layers without gradients, current weights: [batch, ...] in and out.
    TensorBuffer infer(const TensorBuffer &input);
    /// Copies of the parameters, named by global layer index ("3.weight").
    std::vector<NamedTensor> parameters() const;
    /// Overwrites some or all parameters by name; see StageCompute::setParameters().
    /// Between runs, or on the stage's thread from the update hook.
    void setParameters(const std::vector<NamedTensor> &parameters);
    /// The weights its ring partners and this stage agreed on in their last averaging
    /// round, after `version` steps: periodic tests from now on measure these (the
    /// swarm's model) where given, not the current ones; see StageCompute::setConsensus().
    /// dropConsensus() goes back to the current weights (a stage alone, say). On the
    /// stage's thread from the update hook, or between runs.
    void setConsensus(const std::vector<NamedTensor> &weights, int64_t version);
    void dropConsensus();
    /// This stage's training state for a checkpoint: its parameters and optimizer state,
    /// the optimizer steps, and at the root the data cursor. `model` is the whole model;
    /// `batchSize` is the microbatch size. Between runs or from the update hook.
    TrainingState state() const;
    /// Restores a state() of the same stage (model, layers, optimizer). Validates first;
    /// on a mismatch throws rookery::Error and changes nothing. Between runs only.
    void restore(const TrainingState &state);
    int64_t version() const; ///< optimizer steps so far
    /// The learning rate of the optimizer steps from now on (swarm/learning_rate_schedule.h).
    /// From the onUpdate hook (the stage's thread) or while no run is going.
    void setLearningRate(double lr);
    /// The newest training loss this (leaf) stage computed; 0 before any. Any thread.
    double lastLoss() const;
    /// The root's current window (microbatches in flight allowed); 0 on other stages.
    /// Any thread, also during a run.
    int window() const;
    /// Optimizer steps between a microbatch's forward and its backward, averaged over
    /// this run's backwards so far. Any thread, also during a run.
    double meanStaleness() const;
    /// Seconds of work this stage has done since it was built, as its work gate spaces
    /// it: the CPU time its thread spent computing over the gate's CPU share
    /// (WorkGate::cpuShare). Not waits for its neighbours, pauses, or the time other
    /// programs take the cores. Samples over these seconds are what the stage could take
    /// if it were never starved: its speed for the straggler check. Any thread, also
    /// during a run.
    double ownSeconds() const;
    const StageConfig &config() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rookery::train
