// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/support/one_process_run.h"

#include <chrono>

#include "bench/support/swarm_bench_run.h"
#include "engine/model/model_zoo.h"
#include "engine/swarm/learning_rate_schedule.h"
#include "engine/train/trainer.h"

namespace rookery::bench {

OneProcessOutcome runOneProcess(const std::shared_ptr<const data::ImageDataset> &train, const data::ImageDataset &test,
                                int64_t steps, int64_t evalEvery)
{
    using Clock = std::chrono::steady_clock;
    constexpr int64_t kBatch = kSwarmBenchBatch;
    train::TrainerConfig c;
    c.model = model::mlpSpec();
    c.optimizer.learningRate = kSwarmBenchLearningRate;
    c.optimizer.momentum = kSwarmBenchMomentum;
    c.batchSize = kBatch;
    train::Trainer t(c, train);
    OneProcessOutcome o;
    Clock::duration busy{};
    for (int64_t done = 0; done < steps;) {
        const auto start = Clock::now();
        for (int64_t i = 0; i < evalEvery && done < steps; ++i, ++done) {
            // The swarm's schedule, as its stages follow it (the last fifth falls).
            t.setLearningRate(swarm::scheduledLearningRate(c.optimizer, done, steps));
            t.step();
        }
        busy += Clock::now() - start;
        o.finalAccuracy = t.evaluate(test).accuracy;
        if (o.samplesToTarget < 0 && o.finalAccuracy >= 0.85)
            o.samplesToTarget = done * kBatch;
    }
    o.samplesPerSecond = double(steps * kBatch) / std::chrono::duration<double>(busy).count();
    return o;
}

} // namespace rookery::bench
