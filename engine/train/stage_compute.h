// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/: includes LibTorch. The arithmetic of one pipeline stage: its
// layers, optimizer and stashed weight versions; the stage runtime does the scheduling.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/model/model_spec.h"
#include "engine/train/layer_stack.h"
#include "engine/train/optimizer.h"

namespace rookery::train {

/// Layers [first, last) of a model with their own optimizer, trained one microbatch at
/// a time with weight stashing: a microbatch's backward uses the very weights its
/// forward used, even when the optimizer has stepped in between (PipeDream's rule; see
/// docs/architecture.md, "Pipeline"). Gradients of `accumulation` microbatches are
/// summed before each optimizer step.
///
/// Thread safety: not thread-safe; the stage's thread owns it.
///
/// With `scaleRateByStaleness`, each step's learning rate is scaled by the mean
/// staleRateScale() of the microbatches it applies (1 for a leaf, whose gradients are
/// never stale).
class StageCompute
{
public:
    StageCompute(const model::ModelSpec &model, size_t first, size_t last, uint64_t seed,
                 const OptimizerConfig &optimizer, int accumulation, bool predictWeights,
                 bool scaleRateByStaleness = false);

    /// Forward of microbatch `id` with the current weights, keeping what its backward
    /// needs. `input` is [batch, ...] as this stage's first layer takes it.
    torch::Tensor forward(int64_t id, const torch::Tensor &input);

    struct BackwardResult
    {
        torch::Tensor inputGradient; ///< undefined when no earlier layer has parameters
        int64_t staleness = 0;       ///< optimizer steps between its forward and now
    };
    /// Backward of microbatch `id` given the gradient of its output (undefined when the
    /// output needs none); steps the optimizer after every `accumulation` backwards.
    BackwardResult backward(int64_t id, const torch::Tensor &outputGradient);

    struct LeafResult
    {
        torch::Tensor inputGradient;
        double loss = 0; ///< mean cross-entropy of the microbatch
    };
    /// The last stage: forward, cross-entropy against `labels`, backward, at once and
    /// with the current weights, so nothing needs stashing.
    LeafResult trainLeaf(const torch::Tensor &input, const torch::Tensor &labels);

    /// Applies gradients accumulated since the last step, if any (end of a run).
    bool flush();
    /// Forward without gradients, current weights.
    torch::Tensor infer(const torch::Tensor &input);

    /// A test that spans many steps of training measures the model of one moment: keeps
    /// the weights of now (replacing any kept before) for inferKept(), until
    /// releaseKept(): the consensus where one is held (shared, not copied), a copy of the
    /// current weights for the other parameters. One more copy of the stage's parameters
    /// while a test runs, at most.
    void keepForTest();
    bool keepsForTest() const { return !m_kept.empty(); }
    /// Forward without gradients with the weights keepForTest() copied (the current ones
    /// when none are kept).
    torch::Tensor inferKept(const torch::Tensor &input);
    void releaseKept() { m_kept.clear(); }

    /// The weights this stage agreed on with its ring partners in their last averaging
    /// round, after `version` steps: in a swarm of several clusters that average, the
    /// swarm's model, which its tests measure rather than one cluster's drift since
    /// (keepForTest()). Replaces any consensus held before; parameters not named (in no
    /// round that completed) have none, and tests take their current weights. One more
    /// copy of those parameters, for as long as it is held. Throws rookery::Error for a
    /// name or shape this stage does not hold, and keeps nothing then.
    void setConsensus(const std::vector<NamedTensor> &weights, int64_t version);
    void dropConsensus();
    bool holdsConsensus() const { return m_consensusVersion >= 0; }
    /// The version setConsensus() was given; -1 when none is held.
    int64_t consensusVersion() const { return m_consensusVersion; }

    int64_t version() const { return m_optimizer.stepCount(); }
    size_t inFlight() const { return m_records.size(); }
    /// Whether microbatch `id`'s forward is in flight here (its backward is awaited).
    bool holds(int64_t id) const { return m_records.count(id) > 0; }
    bool needsInputGradient() const { return m_needsInputGradient; }
    std::vector<NamedTensor> parameters() const;
    /// Overwrites the named parameters (all or some: a ring averages a layer range).
    /// Checks every name and shape first; on a mismatch throws rookery::Error and
    /// changes nothing. Microbatches in flight keep the weights their forward used.
    void setParameters(const std::vector<NamedTensor> &parameters);
    std::vector<NamedTensor> optimizerState() const { return m_optimizer.state(); }
    /// The rate of the optimizer steps from now on (a schedule's).
    void setLearningRate(double lr) { m_optimizer.setLearningRate(lr); }
    /// Also sets version() to the saved step count.
    void restoreOptimizer(const std::vector<NamedTensor> &state) { m_optimizer.restore(state); }
    /// Forgets the microbatches in flight: their backward will never come (the run they
    /// belonged to was aborted). Gradients already accumulated are kept.
    void dropInFlight();

private:
    // One version of the weights, shared by every microbatch whose forward used it.
    struct WeightSet
    {
        int64_t version = -1;
        int64_t horizon = 0; ///< optimizer steps it was extrapolated by
        std::vector<torch::Tensor> tensors;
    };
    struct Record
    {
        std::shared_ptr<WeightSet> weights;
        int64_t version = 0;
        torch::Tensor input;
        torch::Tensor output;
    };
    struct LayerSlot
    {
        model::LayerSpec spec;
        int weight = -1; ///< index into the weight list, -1 for layers without parameters
    };

    /// `training`: Dropout on (forwards that train) or off (infer).
    torch::Tensor run(torch::Tensor x, const std::vector<torch::Tensor> &weights, bool training) const;
    std::shared_ptr<WeightSet> snapshotFor(int64_t horizon);
    torch::Tensor prepareInput(const torch::Tensor &input) const;
    /// The index of parameter `name` in m_names/m_live; throws rookery::Error for one
    /// this stage does not hold.
    size_t indexOf(const std::string &name) const;
    void accumulate(const std::vector<torch::Tensor> &gradients);
    void countBackward(int64_t staleness);

    LayerStack m_net;
    std::vector<std::string> m_names;
    std::vector<torch::Tensor> m_live; ///< the optimizer's parameters, in layer order
    Optimizer m_optimizer;
    std::vector<LayerSlot> m_layers;
    std::vector<int64_t> m_inputDims;
    int64_t m_classes = 0;
    bool m_needsInputGradient = false;
    int m_accumulation = 1;
    int m_accumulated = 0;
    bool m_predict = false;
    bool m_scaleRate = false;
    double m_rateScaleSum = 0; ///< staleRateScale() of the backwards accumulated since the last step
    std::map<int64_t, Record> m_records;
    std::shared_ptr<WeightSet> m_snapshot;
    std::vector<std::shared_ptr<WeightSet>> m_sets; ///< recycled once no record holds them
    std::vector<torch::Tensor> m_kept;              ///< keepForTest()'s copy
    std::vector<torch::Tensor> m_consensus;         ///< by parameter; undefined: none (setConsensus())
    int64_t m_consensusVersion = -1;
};

} // namespace rookery::train
