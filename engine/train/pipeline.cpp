// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/pipeline.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "engine/common/error.h"
#include "engine/train/batch_source.h"
#include "engine/train/in_process_transport.h"
#include "engine/train/torch_convert.h"

namespace rookery::train {
namespace {

void checkDatasetFits(const model::ModelSpec &spec, const data::ImageDataset &d)
{
    if (spec.input != model::Shape{{d.channels, d.rows, d.cols}} || spec.classes != d.classes)
        throw Error("model '" + spec.name + "' does not fit data set " + d.name + " (input shape or classes differ)");
}

void checkCuts(const PipelineConfig &c)
{
    size_t previous = 0;
    for (size_t cut : c.cuts) {
        if (cut <= previous || cut >= c.model.layers.size())
            throw Error("pipeline cuts must rise strictly inside the " + std::to_string(c.model.layers.size()) +
                        " layers of model '" + c.model.name + "'");
        previous = cut;
    }
}

} // namespace

std::vector<std::pair<std::string, double>> PipelineReport::namedValues() const
{
    std::vector<std::pair<std::string, double>> out{{"microbatches", double(microbatches)},
                                                    {"samples", double(samples)},
                                                    {"seconds", seconds},
                                                    {"samples_per_s", samplesPerSecond},
                                                    {"loss_mean", meanLoss}};
    for (const auto &s : stages)
        for (const auto &[key, value] : s.namedValues())
            out.emplace_back("stage" + std::to_string(s.stage) + "." + key, value);
    return out;
}

struct Pipeline::Impl
{
    PipelineConfig config;
    std::unique_ptr<InProcessTransport> transport;
    std::vector<std::unique_ptr<StageRuntime>> stages;
    const data::ImageDataset *evalDataset = nullptr;
    std::unique_ptr<BatchSource> evalSource;
};

Pipeline::Pipeline(PipelineConfig config, std::shared_ptr<const data::ImageDataset> train, device::WorkGate &gate)
    : d(std::make_unique<Impl>())
{
    model::validate(config.model);
    checkCuts(config);
    if (!train || train->count == 0)
        throw Error("no training data");
    checkDatasetFits(config.model, *train);
    if (config.microbatchSize < 1 || config.microbatchSize > train->count)
        throw Error("microbatch size " + std::to_string(config.microbatchSize) + " must be between 1 and " +
                    std::to_string(train->count));
    d->config = std::move(config);
    const auto &c = d->config;
    const int count = int(c.cuts.size()) + 1;
    StageConfig base;
    base.model = c.model;
    base.stages = count;
    base.optimizer = c.optimizer;
    base.microbatchSize = c.microbatchSize;
    base.accumulation = c.accumulation;
    base.mode = c.mode;
    base.maxInFlight = c.maxInFlight;
    base.predictWeights = c.predictWeights;
    base.scaleRateByStaleness = c.scaleRateByStaleness;
    base.seed = c.seed;
    base.threads = c.threads;
    base.hook = c.hook;
    // Queues as deep as the window: no queue can hold more, so no send ever blocks.
    d->transport = std::make_unique<InProcessTransport>(count, size_t(std::max(base.window(), base.maxWindow)));
    for (int s = 0; s < count; ++s) {
        StageConfig sc = base;
        sc.stage = s;
        sc.firstLayer = s == 0 ? 0 : c.cuts[size_t(s) - 1];
        sc.lastLayer = s + 1 == count ? c.model.layers.size() : c.cuts[size_t(s)];
        d->stages.push_back(
            std::make_unique<StageRuntime>(std::move(sc), d->transport->endpoint(s), gate, s == 0 ? train : nullptr));
    }
}

Pipeline::~Pipeline() = default;

PipelineReport Pipeline::run(int64_t microbatches)
{
    if (auto stop = d->transport->aborted())
        throw Error("the pipeline was stopped earlier and cannot run again: " +
                    (stop->reason.empty() ? std::string("stopped") : stop->reason));
    PipelineReport report;
    std::vector<StageRunResult> results(d->stages.size());
    std::vector<std::thread> threads;
    const auto start = std::chrono::steady_clock::now();
    try {
        for (size_t s = 0; s < d->stages.size(); ++s)
            threads.emplace_back([this, s, microbatches, &results] { results[s] = d->stages[s]->run(microbatches); });
    } catch (const std::exception &e) { // could not start a thread: stop those that did
        d->transport->abort({StopKind::Failed, -1, std::string("could not start a pipeline thread: ") + e.what()});
    }
    for (auto &t : threads)
        t.join();
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const auto &r : results)
        report.stages.push_back(r.metrics);
    if (auto stop = d->transport->aborted()) {
        if (stop->kind == StopKind::Failed)
            throw Error(stop->reason);
        report.stop = *stop;
    } else {
        report.finished = true;
        report.stop = StopMessage{StopKind::Finished, 0, {}};
    }
    report.microbatches = report.stages.front().backwards;
    report.samples = report.microbatches * d->config.microbatchSize;
    report.samplesPerSecond = report.seconds > 0 ? double(report.samples) / report.seconds : 0;
    report.meanLoss = report.stages.back().meanLoss();
    return report;
}

void Pipeline::abort(const std::string &reason) { d->transport->abort({StopKind::Cancelled, -1, reason}); }

EvalMetrics Pipeline::evaluate(const data::ImageDataset &test, int64_t batchSize)
{
    checkDatasetFits(d->config.model, test);
    if (batchSize < 1)
        throw Error("evaluation batch size must be positive");
    if (d->evalDataset != &test) {
        d->evalSource = std::make_unique<BatchSource>(test);
        d->evalDataset = &test;
    }
    torch::NoGradGuard noGrad;
    double lossSum = 0;
    int64_t correct = 0;
    for (int64_t first = 0; first < test.count; first += batchSize) {
        Batch b = d->evalSource->slice(first, std::min(batchSize, test.count - first));
        TensorBuffer x = toBuffer(b.images);
        for (auto &stage : d->stages)
            x = stage->infer(x);
        const torch::Tensor logits = fromBuffer(x);
        lossSum += torch::nn::functional::cross_entropy(
                       logits, b.labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                       .item<double>();
        correct += logits.argmax(1).eq(b.labels).sum().item<int64_t>();
    }
    return {lossSum / double(test.count), double(correct) / double(test.count), test.count};
}

std::vector<NamedTensor> Pipeline::parameters() const
{
    std::vector<NamedTensor> out;
    for (const auto &stage : d->stages)
        for (auto &p : stage->parameters())
            out.push_back(std::move(p));
    return out;
}

int Pipeline::stageCount() const { return int(d->stages.size()); }

const PipelineConfig &Pipeline::config() const { return d->config; }

} // namespace rookery::train
