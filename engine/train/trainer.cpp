// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/trainer.h"

#include <chrono>
#include <cstring>
#include <unordered_map>

#include "engine/common/error.h"
#include "engine/data/epoch_sampler.h"
#include "engine/train/batch_source.h"
#include "engine/train/layer_stack.h"
#include "engine/train/optimizer.h"
#include "engine/train/torch_convert.h"

namespace rookery::train {
namespace {

std::vector<std::pair<std::string, torch::Tensor>> namedParameters(LayerStack &net)
{
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (auto &item : net->named_parameters())
        out.emplace_back(item.key(), item.value());
    return out;
}

void checkDatasetFits(const model::ModelSpec &spec, const data::ImageDataset &d)
{
    const model::Shape expected{{d.channels, d.rows, d.cols}};
    if (spec.input != expected)
        throw Error("model '" + spec.name + "' takes " + spec.input.describe() + " inputs but data set " + d.name +
                    " holds " + expected.describe() + " images");
    if (spec.classes != d.classes)
        throw Error("model '" + spec.name + "' has " + std::to_string(spec.classes) + " classes but data set " +
                    d.name + " has " + std::to_string(d.classes));
}

std::vector<uint8_t> rngBytes()
{
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    torch::Tensor s = generator.get_state();
    std::vector<uint8_t> out(size_t(s.nbytes()));
    std::memcpy(out.data(), s.data_ptr(), out.size());
    return out;
}

} // namespace

struct Trainer::Impl
{
    Impl(TrainerConfig c, std::shared_ptr<const data::ImageDataset> d)
        : config(std::move(c))
        , dataset(std::move(d))
        , net(config.model, 0, config.seed)
        , optimizer(namedParameters(net), config.optimizer)
        , sampler(dataset->count, config.seed)
        , source(dataset)
    { }

    TrainerConfig config;
    std::shared_ptr<const data::ImageDataset> dataset;
    LayerStack net;
    Optimizer optimizer;
    data::EpochSampler sampler;
    BatchSource source;
    // Evaluation data, its bytes copied once per data set.
    const data::ImageDataset *evalDataset = nullptr;
    std::unique_ptr<BatchSource> evalSource;
};

Trainer::Trainer(TrainerConfig config, std::shared_ptr<const data::ImageDataset> train)
{
    if (!train || train->count == 0)
        throw Error("no training data");
    model::validate(config.model);
    validate(config.optimizer);
    checkDatasetFits(config.model, *train);
    if (config.batchSize < 1 || config.batchSize > train->count)
        throw Error("batch size " + std::to_string(config.batchSize) + " must be between 1 and " +
                    std::to_string(train->count));
    d = std::make_unique<Impl>(std::move(config), std::move(train));
}

Trainer::~Trainer() = default;

StepMetrics Trainer::step()
{
    const auto start = std::chrono::steady_clock::now();
    Batch batch = d->source.gather(d->sampler.next(d->config.batchSize));
    d->net->train();
    d->optimizer.zeroGrad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(d->net->forward(batch.images), batch.labels);
    loss.backward();
    d->optimizer.step();
    StepMetrics m;
    m.loss = loss.item<double>();
    m.step = d->optimizer.stepCount();
    m.samples = batch.labels.size(0);
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return m;
}

EvalMetrics Trainer::evaluate(const data::ImageDataset &test, int64_t batchSize)
{
    checkDatasetFits(d->config.model, test);
    if (d->evalDataset != &test) {
        d->evalSource = std::make_unique<BatchSource>(test);
        d->evalDataset = &test;
    }
    torch::NoGradGuard noGrad;
    d->net->eval();
    double lossSum = 0;
    int64_t correct = 0;
    for (int64_t first = 0; first < test.count; first += batchSize) {
        Batch b = d->evalSource->slice(first, std::min(batchSize, test.count - first));
        torch::Tensor logits = d->net->forward(b.images);
        lossSum += torch::nn::functional::cross_entropy(
                       logits, b.labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                       .item<double>();
        correct += logits.argmax(1).eq(b.labels).sum().item<int64_t>();
    }
    d->net->train();
    return {lossSum / double(test.count), double(correct) / double(test.count), test.count};
}

int64_t Trainer::stepCount() const { return d->optimizer.stepCount(); }

const TrainerConfig &Trainer::config() const { return d->config; }

void Trainer::setLearningRate(double lr) { d->optimizer.setLearningRate(lr); }

TrainingState Trainer::state() const
{
    TrainingState s;
    s.model = d->config.model;
    s.optimizer = d->optimizer.config();
    s.batchSize = d->config.batchSize;
    s.seed = d->config.seed;
    s.step = d->optimizer.stepCount();
    s.cursor = d->sampler.cursor();
    s.rngState = rngBytes();
    for (const auto &[name, p] : namedParameters(d->net))
        s.parameters.push_back(toNamed(name, p));
    s.optimizerState = d->optimizer.state();
    return s;
}

void Trainer::restore(const TrainingState &s)
{
    if (!(s.model == d->config.model))
        throw Error("checkpoint is for model '" + s.model.name + "', not '" + d->config.model.name + "'");
    if (!(s.optimizer == d->config.optimizer) || s.batchSize != d->config.batchSize || s.seed != d->config.seed)
        throw Error("checkpoint was trained with other settings (optimizer, batch size or seed)");
    std::unordered_map<std::string, const NamedTensor *> byName;
    for (const auto &t : s.parameters)
        byName[t.name] = &t;
    auto params = namedParameters(d->net);
    if (byName.size() != params.size())
        throw Error("checkpoint holds " + std::to_string(byName.size()) + " parameters, the model has " +
                    std::to_string(params.size()));
    for (auto &[name, p] : params) {
        auto it = byName.find(name);
        if (it == byName.end())
            throw Error("checkpoint lacks parameter '" + name + "'");
        checkCompatible(p, *it->second);
    }
    if (!s.rngState.empty() && s.rngState.size() != rngBytes().size())
        throw Error("checkpoint's random generator state has " + std::to_string(s.rngState.size()) +
                    " bytes, expected " + std::to_string(rngBytes().size()));
    d->optimizer.restore(s.optimizerState); // validates before it changes anything
    for (auto &[name, p] : params)
        copyInto(p, *byName.at(name));
    d->sampler.setCursor(s.cursor);
    if (!s.rngState.empty()) {
        torch::Tensor t = torch::empty({int64_t(s.rngState.size())}, torch::kUInt8);
        std::memcpy(t.data_ptr(), s.rngState.data(), s.rngState.size());
        at::Generator generator = at::detail::getDefaultCPUGenerator();
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator.set_state(t);
    }
}

} // namespace rookery::train
