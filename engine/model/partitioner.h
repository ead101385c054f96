// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"

namespace rookery::model {

/// What the partitioner needs to know about the device that will run one stage. A
/// plain value so that the partitioner does not depend on how devices are profiled.
struct StageDevice
{
    std::string name;                                                    ///< for messages: "node 3", "laptop"
    double gflops = 0;                                                   ///< measured training throughput, GFLOP/s
    uint64_t memoryBytes = 0;                                            ///< what the stage may use
    double linkBytesPerSecond = std::numeric_limits<double>::infinity(); ///< its upload
};

/// What a cut has to account for besides the layers themselves.
struct PartitionOptions
{
    int64_t inputBytes = 0;          ///< one microbatch of model input, held by the root
    int64_t labelBytes = 0;          ///< labels travelling with each microbatch to the leaf
    double optimizerStateCopies = 1; ///< SGD with momentum 1, AdamW 2, plain SGD 0
    int inFlight = 0;                ///< microbatches in flight at the root; 0 = stages + 1
};

/// The options for `spec` trained in microbatches of `microbatch` samples.
PartitionOptions partitionOptionsFor(const ModelSpec &spec, int64_t microbatch, double optimizerStateCopies = 1);

/// One stage of a cut: layers [firstLayer, lastLayer) on one device, with its predicted
/// time per microbatch and memory.
struct StagePlan
{
    size_t firstLayer = 0;
    size_t lastLayer = 0;
    double computeSeconds = 0;  ///< forward + backward
    double transferSeconds = 0; ///< uploads: output activations (+ labels) and input gradient
    /// The slower of compute and transfer: a node's network thread uploads one
    /// microbatch while its stage thread computes the next, so the stage keeps pace
    /// with whichever of the two is slower.
    double seconds = 0;
    uint64_t memoryBytes = 0;
    bool fits = true; ///< memoryBytes <= the device's memory
};

/// A model cut into contiguous stages, one per device, in device order.
///
/// Thread safety: a plain value.
struct Partition
{
    std::vector<StagePlan> stages;
    size_t bottleneck = 0; ///< index of the slowest stage

    double bottleneckSeconds() const { return stages.empty() ? 0 : stages[bottleneck].seconds; }
    /// First layer of every stage but the first: what PipelineConfig::cuts takes.
    std::vector<size_t> cuts() const;
    bool fits() const;
    /// "[0,2) 1.20 ms | [2,6) 1.18 ms; bottleneck stage 0".
    std::string describe() const;
};

/// Floating-point operations to train layer `index` on the batch `costs` were computed
/// for: forward, plus a backward of twice the forward for layers with parameters (input
/// and weight gradients) and once the forward for the others (input gradient only);
/// the input gradient is skipped where no earlier layer has parameters, because nobody
/// needs it. The cut does not change this.
double trainingFlops(const std::vector<LayerCost> &costs, size_t index);

/// The cut that minimises the slowest stage's time per microbatch while every stage fits
/// its device's memory: dynamic programming over (device, last layer), exact and
/// deterministic (ties go to the earliest cut). Every device gets at least one layer.
/// Throws rookery::Error when no cut fits, naming the device that is too small when a
/// single device is to blame, or when a device's figures are not usable.
///
/// Thread safety: this and the other functions here are pure; call them from anywhere.
Partition partitionLayers(const std::vector<LayerCost> &costs, const std::vector<StageDevice> &devices,
                          const PartitionOptions &options = {});

/// partitionLayers() without the explanation: no value when no cut fits (the devices'
/// figures must be usable; it throws as partitionLayers() does when they are not). For
/// searches over many device orders, where most do not fit and an exception with its
/// message for each costs more than the cut itself.
std::optional<Partition> tryPartitionLayers(const std::vector<LayerCost> &costs,
                                            const std::vector<StageDevice> &devices,
                                            const PartitionOptions &options = {});

/// partitionLayers() for a model and microbatch size.
Partition partitionModel(const ModelSpec &spec, int64_t microbatch, const std::vector<StageDevice> &devices,
                         double optimizerStateCopies = 1);

/// Predicted times and memory of a given cut (`cuts` as Partition::cuts()), without
/// requiring it to fit: stages that do not fit have `fits` false. Throws rookery::Error
/// for cuts that are not strictly increasing inside (0, layers).
Partition evaluateCut(const std::vector<LayerCost> &costs, const std::vector<StageDevice> &devices,
                      const PartitionOptions &options, const std::vector<size_t> &cuts);

/// Ravnest's cut, for comparison: every node but the last gets round(1/S, 1) of the
/// parameters (0.2/0.2/0.2/0.4 for four nodes), the last the rest, filled greedily in
/// layer order; it ignores speed and memory. Where that rule leaves a node without a
/// layer (Ravnest then fails an assertion and retries), the last stage with two or more
/// layers gives up its final layer, until every node has one.
std::vector<size_t> equalParameterCuts(const std::vector<LayerCost> &costs, size_t stages);

} // namespace rookery::model
