// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/pipeline_evaluation.h"

#include <chrono>
#include <cstdio>

#include "engine/common/error.h"
#include "engine/device/compute_threads.h"
#include "engine/participant/weights_relay.h"
#include "engine/train/evaluate.h"

namespace rookery::participant {

using Clock = std::chrono::steady_clock;

PipelineEvaluation::PipelineEvaluation(WeightsRelay &relay, Config config, Callbacks callbacks)
    : m_relay(relay)
    , m_config(std::move(config))
    , m_callbacks(std::move(callbacks))
{ }

PipelineEvaluation::~PipelineEvaluation()
{
    close();
    join();
}

void PipelineEvaluation::schedule(int64_t step)
{
    if (m_evaluating.exchange(true))
        return; // one at a time; a periodic one may be skipped
    if (m_thread.joinable())
        m_thread.join();
    m_thread = std::thread([this, step] {
        evaluate(false, step);
        m_evaluating = false;
    });
}

void PipelineEvaluation::runFinal(int64_t step)
{
    if (m_thread.joinable())
        m_thread.join();
    m_evaluating = true;
    evaluate(true, step);
    m_evaluating = false;
}

void PipelineEvaluation::close() { m_closing = true; }

void PipelineEvaluation::join()
{
    if (m_thread.joinable())
        m_thread.join();
}

void PipelineEvaluation::evaluate(bool final, int64_t step)
{
    auto say = [this](const std::string &text) {
        if (m_callbacks.message)
            m_callbacks.message(text);
    };
    // Torch's thread count is per thread: set it here, small, so that evaluating beside
    // the stage thread does not take its cores.
    device::applyThreadConfig({1, 1});
    const auto deadline = Clock::now() + std::chrono::seconds(final ? 120 : 20);
    while (Clock::now() < deadline) {
        if (m_closing)
            return; // a new assignment or a stop: the weights to evaluate are gone anyway
        // The final evaluation waits for every stage's final (averaged) weights.
        auto weights =
            m_relay.gatherPipeline(m_config.stages, std::chrono::seconds(5), final ? m_config.finalVersion : 0);
        if (!weights) {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            continue;
        }
        try {
            const auto e = train::evaluateParameters(m_config.model, *weights, *m_config.test,
                                                     train::evaluationBatch(m_config.model));
            if (m_callbacks.accuracy)
                m_callbacks.accuracy(e.accuracy);
            char text[200];
            std::snprintf(text, sizeof text, "%s cluster %d at step %lld: test accuracy %.2f%%, test loss %.4f",
                          final ? "done:" : "evaluated", m_config.cluster + 1, (long long)step, e.accuracy * 100,
                          e.loss);
            say(text);
        } catch (const Error &e) {
            say(std::string("evaluation failed: ") + e.what());
        }
        return;
    }
    say(std::string(final ? "final " : "") + "evaluation skipped: not every stage of the pipeline answered in time");
}

} // namespace rookery::participant
