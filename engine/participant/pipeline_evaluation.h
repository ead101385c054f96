// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "engine/data/image_dataset.h"
#include "engine/model/model_spec.h"

namespace rookery::participant {

class WeightsRelay;

/// A pipeline root's test of the whole model its pipeline holds: gathers every stage's
/// published weights through the WeightsRelay (a request travels down the pipeline and
/// the answers come back up) and evaluates them on the test set. Periodic evaluations
/// run on a thread of their own, one at a time, so training goes on meanwhile; the final
/// one runs on the caller's thread and waits for every stage's final weights.
///
/// Thread safety: schedule() and runFinal() from the stage thread; close() from any
/// thread; join() (and the destructor) from the thread that owns the evaluation, once
/// nothing calls schedule() any more. Callbacks come from the evaluation thread or the
/// thread of runFinal().
class PipelineEvaluation
{
public:
    struct Config
    {
        model::ModelSpec model; ///< the whole model, all stages
        std::shared_ptr<const data::ImageDataset> test;
        int stages = 1;            ///< stages of the pipeline; all must answer
        int cluster = 0;           ///< for the messages ("cluster 1"), 0-based
        uint64_t finalVersion = 0; ///< the version every stage publishes its final weights under
    };
    struct Callbacks
    {
        std::function<void(const std::string &)> message; ///< a line for people
        std::function<void(double accuracy)> accuracy;    ///< a new test accuracy, 0..1
    };

    PipelineEvaluation(WeightsRelay &relay, Config config, Callbacks callbacks);
    /// Gives up an evaluation in progress (close()) and joins its thread.
    ~PipelineEvaluation();
    PipelineEvaluation(const PipelineEvaluation &) = delete;
    PipelineEvaluation &operator=(const PipelineEvaluation &) = delete;

    /// Starts a periodic evaluation of the weights at `step` on the evaluation thread,
    /// unless one is still going (then this one is skipped).
    void schedule(int64_t step);
    /// The final evaluation, on the calling thread: waits for the periodic one, then up
    /// to 120 s for every stage's final weights.
    void runFinal(int64_t step);
    /// The weights to evaluate are about to go (a new assignment or a stop): an
    /// evaluation waiting on the other stages gives up within one try (5 s).
    void close();
    /// Waits for the evaluation thread to end.
    void join();

private:
    void evaluate(bool final, int64_t step);

    WeightsRelay &m_relay;
    const Config m_config;
    const Callbacks m_callbacks;
    std::thread m_thread;
    std::atomic<bool> m_evaluating{false};
    std::atomic<bool> m_closing{false};
};

} // namespace rookery::participant
