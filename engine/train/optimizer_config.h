// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace rookery::train {

enum class OptimizerKind { Sgd, AdamW };

/// How the learning rate falls over a swarm's run, after any warm-up (engine/swarm
/// learning_rate_schedule.h): Tail holds it, then falls in a straight line over the last
/// fifth of the run; Cosine falls along half a cosine from the end of the warm-up to the
/// end of the run; Constant holds it. Each ends at `finalLearningRateFactor` of it.
enum class LearningRateDecay { Tail, Cosine, Constant };

/// Optimizer settings. Semantics match PyTorch's SGD (momentum, no dampening, weight
/// decay added to the gradient) and AdamW (decoupled weight decay).
///
/// Thread safety: a plain value.
struct OptimizerConfig
{
    OptimizerKind kind = OptimizerKind::Sgd;
    double learningRate = 0.05;
    double momentum = 0.9;    ///< SGD
    double weightDecay = 0.0; ///< SGD: L2 added to the gradient; AdamW: decoupled
    double beta1 = 0.9;       ///< AdamW
    double beta2 = 0.999;     ///< AdamW
    double epsilon = 1e-8;    ///< AdamW
    /// The schedule a swarm's stages follow (all compute it from the step alone).
    int64_t warmupSteps = 0; ///< rises in a straight line from lr/warmupSteps to lr over these steps
    LearningRateDecay decay = LearningRateDecay::Tail;
    double finalLearningRateFactor = 0.1; ///< the rate at the last step, as a share of lr (not for Constant)

    bool operator==(const OptimizerConfig &) const = default;
};

std::string optimizerKindName(OptimizerKind kind);
/// "sgd" or "adamw"; throws rookery::Error for anything else.
OptimizerKind optimizerKindFromName(const std::string &name);
std::string decayName(LearningRateDecay decay);
/// "tail", "cosine" or "constant"; throws rookery::Error for anything else.
LearningRateDecay decayFromName(const std::string &name);
/// Throws rookery::Error naming the first out-of-range field.
void validate(const OptimizerConfig &config);

/// Copies of the parameters the optimizer keeps as state, for memory planning: AdamW 2
/// (two moments), SGD with momentum 1 (the velocity), plain SGD 0.
double stateCopies(const OptimizerConfig &config);

/// The scale of the learning rate for a gradient `staleness` optimizer steps old:
/// 1 / (1 + staleness), staleness-aware asynchronous SGD (Zhang, Gupta, Lian, Liu 2016,
/// "Staleness-aware Async-SGD", with one added so a fresh gradient keeps the whole
/// rate). A pipeline root 4 steps stale then steps at a fifth of the rate; on the MLP
/// that reached 85% in fewer steps than every constant scale tried (docs/benchmarks.md,
/// bench_staleness). 1 for staleness 0 or less.
double staleRateScale(int64_t staleness);

/// JSON text for checkpoints; the inverse throws rookery::Error on malformed input.
std::string toJson(const OptimizerConfig &config);
OptimizerConfig optimizerConfigFromJson(const std::string &json);

} // namespace rookery::train
