// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

#include "engine/train/optimizer_config.h"

namespace rookery::swarm {

/// The learning rate a swarm stage uses for its next optimizer step, after `step` of
/// `totalSteps`: the run's own (`base`) for the first 80% of the run, then falling in a
/// straight line to a tenth of it at the last step. With a constant rate the test
/// accuracy of the final weights wanders by a point or two from one evaluation to the
/// next (SGD's noise at full rate); annealing the last fifth lets each cluster settle,
/// so the accuracy a run ends with is the one it had reached. Every node computes it
/// from the step alone, so the stages of a pipeline and the clusters of a ring agree
/// without telling each other. `totalSteps` <= 0 (no end): `base` throughout.
double annealedLearningRate(double base, int64_t step, int64_t totalSteps, double finalFactor = 0.1);

/// The learning rate for the optimizer step after `step` of `totalSteps` under the
/// schedule `optimizer` names: a straight warm-up from lr/warmupSteps to lr over the
/// first warmupSteps steps, then its decay (train::LearningRateDecay) to
/// finalLearningRateFactor x lr at the last step. `totalSteps` <= 0 (no end): lr after
/// the warm-up.
double scheduledLearningRate(const train::OptimizerConfig &optimizer, int64_t step, int64_t totalSteps);

} // namespace rookery::swarm
