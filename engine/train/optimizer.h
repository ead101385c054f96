// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/: includes LibTorch.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "engine/common/named_tensor.h"
#include "engine/train/optimizer_config.h"

namespace rookery::train {

/// SGD with momentum and AdamW over a fixed list of named parameters, with PyTorch's
/// update rules. Our own rather than torch::optim because its state must leave as
/// plain named tensors (checkpoints, ring averaging of optimizer state, a stage that
/// takes over from another), and torch::optim keys state by TensorImpl address.
class Optimizer
{
public:
    Optimizer(std::vector<std::pair<std::string, torch::Tensor>> parameters, OptimizerConfig config);

    /// One update from the gradients currently in the parameters' .grad(), clipped
    /// first: after kClipWarmup steps, a gradient whose norm is over kClipFactor times the
    /// running scale of the norms is scaled down to that bound, and a non-finite one is
    /// not applied at all (the step still counts). Honest training stays well inside the
    /// bound; a poisoned gradient that got past the checks moves the weights at most a
    /// few ordinary steps' worth.
    ///
    /// `rateScale` (0, 1] scales the learning rate of this step alone (a pipeline stage
    /// whose gradients are stale takes smaller steps); predictInto() extrapolates with
    /// the rate of the last step.
    void step(double rateScale = 1);
    static constexpr int64_t kClipWarmup = 16;
    static constexpr double kClipFactor = 10.0;
    /// Steps whose gradient was clipped, and steps skipped as non-finite, so far.
    int64_t clippedSteps() const { return m_clipped; }
    int64_t skippedSteps() const { return m_skipped; }
    /// Zeroes the gradients in place.
    void zeroGrad();

    /// Writes into `into` (tensors shaped as the parameters, in this optimizer's order)
    /// the parameters as `steps` more updates would leave them if the direction held:
    /// the momentum (SGD) or the bias-corrected Adam step, without new gradients or
    /// weight decay; a plain copy when there is no direction yet. Pipeline stages run a
    /// microbatch on the weights its gradient will be applied to (weight prediction).
    void predictInto(std::vector<torch::Tensor> &into, double steps) const;

    int64_t stepCount() const { return m_step; }
    const OptimizerConfig &config() const { return m_config; }
    void setLearningRate(double lr) { m_config.learningRate = lr; }

    /// "<param>.momentum" (SGD) or "<param>.exp_avg" and "<param>.exp_avg_sq" (AdamW),
    /// then "step". Copies.
    std::vector<NamedTensor> state() const;
    /// The inverse of state(); throws rookery::Error if a buffer is missing or misshapen.
    void restore(const std::vector<NamedTensor> &state);

private:
    void stepSgd(double lr);
    void stepAdamW(double lr);
    /// Clips the gradients as step() says; false when they are not to be applied.
    bool clipGradients();

    struct Slot
    {
        std::string name;
        torch::Tensor param;
        torch::Tensor buf1; // momentum or exp_avg
        torch::Tensor buf2; // exp_avg_sq
    };
    std::vector<Slot> m_slots;
    OptimizerConfig m_config;
    int64_t m_step = 0;
    double m_lastRateScale = 1; // step()'s last rateScale, for predictInto()
    double m_logNormScale = 0;  // running mean of log gradient norms (clipped ones at the bound)
    int64_t m_normsSeen = 0;
    int64_t m_clipped = 0, m_skipped = 0;
};

} // namespace rookery::train
