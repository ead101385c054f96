// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/support/one_process_run.h"

#include <chrono>

#include "engine/model/model_zoo.h"
#include "engine/train/trainer.h"

namespace rookery::bench {

OneProcessOutcome runOneProcess(const std::shared_ptr<const data::ImageDataset> &train, const data::ImageDataset &test,
                                int64_t steps, int64_t evalEvery)
{
    using Clock = std::chrono::steady_clock;
    constexpr int64_t kBatch = 64;
    train::TrainerConfig c;
    c.model = model::mlpSpec();
    c.optimizer.learningRate = 0.05;
    c.optimizer.momentum = 0.9;
    c.batchSize = kBatch;
    train::Trainer t(c, train);
    OneProcessOutcome o;
    Clock::duration busy{};
    for (int64_t done = 0; done < steps;) {
        const auto start = Clock::now();
        for (int64_t i = 0; i < evalEvery && done < steps; ++i, ++done)
            t.step();
        busy += Clock::now() - start;
        o.finalAccuracy = t.evaluate(test).accuracy;
        if (o.samplesToTarget < 0 && o.finalAccuracy >= 0.85)
            o.samplesToTarget = done * kBatch;
    }
    o.samplesPerSecond = double(steps * kBatch) / std::chrono::duration<double>(busy).count();
    return o;
}

} // namespace rookery::bench
