// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/evaluate.h"

#include <algorithm>
#include <unordered_map>

#include "engine/common/error.h"
#include "engine/train/batch_source.h"
#include "engine/train/layer_stack.h"
#include "engine/train/torch_convert.h"

namespace rookery::train {

EvalMetrics evaluateParameters(const model::ModelSpec &spec, const std::vector<NamedTensor> &parameters,
                               const data::ImageDataset &test, int64_t batchSize)
{
    model::validate(spec);
    LayerStack net(spec, 0, 0);
    std::unordered_map<std::string, const NamedTensor *> byName;
    for (const auto &p : parameters)
        byName[p.name] = &p;
    for (auto &item : net->named_parameters()) {
        auto it = byName.find(item.key());
        if (it == byName.end())
            throw Error("cannot evaluate: parameter '" + item.key() + "' is missing");
        copyInto(item.value(), *it->second);
    }
    torch::NoGradGuard noGrad;
    net->eval();
    BatchSource source(test);
    double lossSum = 0;
    int64_t correct = 0;
    for (int64_t first = 0; first < test.count; first += batchSize) {
        Batch b = source.slice(first, std::min(batchSize, test.count - first));
        torch::Tensor logits = net->forward(b.images);
        lossSum += torch::nn::functional::cross_entropy(
                       logits, b.labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                       .item<double>();
        correct += logits.argmax(1).eq(b.labels).sum().item<int64_t>();
    }
    return {lossSum / double(test.count), double(correct) / double(test.count), test.count};
}

int64_t evaluationBatch(const model::ModelSpec &spec, uint64_t budgetBytes)
{
    int64_t largest = 1;
    for (const auto &c : model::layerCosts(spec, 1))
        largest = std::max({largest, c.activationBytes, c.savedBytes});
    return std::clamp<int64_t>(int64_t(budgetBytes) / largest, 16, 1000);
}

} // namespace rookery::train
