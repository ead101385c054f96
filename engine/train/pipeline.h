// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/device/work_gate.h"
#include "engine/model/model_spec.h"
#include "engine/train/optimizer_config.h"
#include "engine/train/stage_runtime.h"
#include "engine/train/trainer.h"

namespace rookery::train {

/// A model cut into stages that run on threads of this process.
struct PipelineConfig
{
    model::ModelSpec model;
    /// First layer of every stage but the first (model::Partition::cuts()): {2} makes
    /// stages [0, 2) and [2, layers). Empty: one stage.
    std::vector<size_t> cuts;
    OptimizerConfig optimizer;
    int64_t microbatchSize = 64;
    int accumulation = 1; ///< each stage steps its optimizer after this many backwards
    PipelineMode mode = PipelineMode::Asynchronous;
    int maxInFlight = 0;              ///< 0: stages + 1 (asynchronous), 1 (synchronous)
    bool predictWeights = true;       ///< see StageConfig
    bool scaleRateByStaleness = true; ///< see StageConfig
    uint64_t seed = 1;
    device::ThreadConfig threads{1, 1}; ///< per stage thread
    StageHook hook;                     ///< tests: delays and failures
};

/// What one run of the pipeline did, as plain values.
struct PipelineReport
{
    int64_t microbatches = 0; ///< completed (forward and backward through every stage)
    int64_t samples = 0;
    double seconds = 0;
    double samplesPerSecond = 0;
    double meanLoss = 0; ///< over the run's microbatches, at the leaf
    bool finished = false;
    StopMessage stop; ///< why the run ended (kind Finished when it ran to the end)
    std::vector<StageMetrics> stages;

    /// "samples_per_s", "loss_mean", then "stage0.busy_s", ... for reports and benchmarks.
    std::vector<std::pair<std::string, double>> namedValues() const;
};

/// The asynchronous pipeline in one process: one StageRuntime per stage, each on its own
/// thread, connected by the in-process transport. Its stages start with the weights of
/// the unsplit Trainer of the same seed and read the data in the same order.
///
/// Thread safety: run(), evaluate() and parameters() from one thread at a time;
/// abort() from any thread.
class Pipeline
{
public:
    /// Throws rookery::Error for a model, cut or data set that does not fit together.
    Pipeline(PipelineConfig config, std::shared_ptr<const data::ImageDataset> train,
             device::WorkGate &gate = openGate());
    ~Pipeline();
    Pipeline(const Pipeline &) = delete;
    Pipeline &operator=(const Pipeline &) = delete;

    /// Trains `microbatches` microbatches and returns when all came back, a stage's work
    /// gate closed (finished = false), or abort() was called. Successive runs continue
    /// where the last one stopped. Throws rookery::Error with the first stage's error when
    /// a stage fails, and for a run after a pipeline that was stopped.
    PipelineReport run(int64_t microbatches);
    /// Stops a run in progress from another thread; run() then returns unfinished.
    void abort(const std::string &reason);

    /// Loss and accuracy over `test`, passing batches through the stages in turn.
    EvalMetrics evaluate(const data::ImageDataset &test, int64_t batchSize = 1000);
    /// All stages' parameters, in layer order.
    std::vector<NamedTensor> parameters() const;
    int stageCount() const;
    const PipelineConfig &config() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rookery::train
