// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/learning_rate_schedule.h"

#include <algorithm>
#include <cmath>

namespace rookery::swarm {

namespace {
constexpr double kAnnealedShare = 0.2; // the last fifth of the run
} // namespace

double annealedLearningRate(double base, int64_t step, int64_t totalSteps, double finalFactor)
{
    if (totalSteps <= 0)
        return base;
    const double start = double(totalSteps) * (1.0 - kAnnealedShare);
    const double progress = std::clamp((double(step) - start) / (double(totalSteps) - start), 0.0, 1.0);
    return base * (1.0 - (1.0 - finalFactor) * progress);
}

double scheduledLearningRate(const train::OptimizerConfig &o, int64_t step, int64_t totalSteps)
{
    const double base = o.learningRate;
    if (step < o.warmupSteps)
        return base * double(std::max<int64_t>(step, 0) + 1) / double(o.warmupSteps);
    if (totalSteps <= 0)
        return base;
    switch (o.decay) {
    case train::LearningRateDecay::Constant:
        return base;
    case train::LearningRateDecay::Cosine: {
        const double span = std::max(1.0, double(totalSteps - o.warmupSteps));
        const double progress = std::clamp(double(step - o.warmupSteps) / span, 0.0, 1.0);
        const double f = o.finalLearningRateFactor;
        return base * (f + (1.0 - f) * 0.5 * (1.0 + std::cos(M_PI * progress)));
    }
    case train::LearningRateDecay::Tail:
        break;
    }
    return annealedLearningRate(base, step, totalSteps, o.finalLearningRateFactor);
}

} // namespace rookery::swarm
