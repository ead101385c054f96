// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/learning_rate_schedule.h"

#include <algorithm>

namespace rookery::swarm {

namespace {
constexpr double kAnnealedShare = 0.2; // the last fifth of the run
constexpr double kFinalFactor = 0.1;   // ends at a tenth of the run's rate
} // namespace

double annealedLearningRate(double base, int64_t step, int64_t totalSteps)
{
    if (totalSteps <= 0)
        return base;
    const double start = double(totalSteps) * (1.0 - kAnnealedShare);
    const double progress = std::clamp((double(step) - start) / (double(totalSteps) - start), 0.0, 1.0);
    return base * (1.0 - (1.0 - kFinalFactor) * progress);
}

} // namespace rookery::swarm
