// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>

#include "engine/data/image_dataset.h"
#include "engine/model/model_spec.h"
#include "engine/train/optimizer_config.h"
#include "engine/train/training_state.h"

namespace rookery::train {

struct TrainerConfig
{
    model::ModelSpec model;
    OptimizerConfig optimizer;
    int64_t batchSize = 64;
    uint64_t seed = 1;
};

/// What one training step produced.
struct StepMetrics
{
    int64_t step = 0;    ///< steps completed, this one included
    double loss = 0;     ///< mean cross-entropy of the batch
    int64_t samples = 0; ///< samples in the batch
    double seconds = 0;  ///< wall time of the step
    double samplesPerSecond() const { return seconds > 0 ? double(samples) / seconds : 0; }
};

struct EvalMetrics
{
    double loss = 0;
    double accuracy = 0; ///< fraction correct, 0..1
    int64_t samples = 0;
};

/// Trains a whole model in this process: the baseline every distributed mode is
/// measured against. Thread counts are the caller's business (device/compute_threads.h),
/// set on the thread that calls step().
///
/// Thread safety: not thread-safe; one thread drives a Trainer. state() copies, so the
/// copy may be handed to another thread (the checkpoint writer).
class Trainer
{
public:
    /// Throws rookery::Error for an invalid model or optimizer, or a data set the model
    /// cannot take.
    Trainer(TrainerConfig config, std::shared_ptr<const data::ImageDataset> train);
    ~Trainer();
    Trainer(const Trainer &) = delete;
    Trainer &operator=(const Trainer &) = delete;

    StepMetrics step();
    /// Loss and accuracy over the whole of `test`, in evaluation mode, without gradients.
    EvalMetrics evaluate(const data::ImageDataset &test, int64_t batchSize = 1000);

    int64_t stepCount() const;
    const TrainerConfig &config() const;
    /// The rate of the optimizer steps from now on (a schedule's, as a swarm stage
    /// follows it).
    void setLearningRate(double lr);

    TrainingState state() const;
    /// Restores a state saved by state(); the model and optimizer must match this
    /// trainer's, else rookery::Error and nothing changes.
    void restore(const TrainingState &state);

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rookery::train
