// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/stage_compute.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/train/layer_ops.h"
#include "engine/train/torch_convert.h"

namespace rookery::train {
namespace {

using model::LayerKind;

std::string shapeOf(const torch::Tensor &t)
{
    return shapeText(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
}

} // namespace

StageCompute::StageCompute(const model::ModelSpec &spec, size_t first, size_t last, uint64_t seed,
                           const OptimizerConfig &optimizer, int accumulation, bool predictWeights,
                           bool scaleRateByStaleness)
    : m_net(model::sliceOf(spec, first, last), first, seed)
    , m_optimizer(
          [&] {
              std::vector<std::pair<std::string, torch::Tensor>> named;
              for (auto &item : m_net->named_parameters())
                  named.emplace_back(item.key(), item.value());
              return named;
          }(),
          optimizer)
    , m_accumulation(std::max(1, accumulation))
    , m_predict(predictWeights)
    , m_scaleRate(scaleRateByStaleness)
{
    const model::ModelSpec slice = model::sliceOf(spec, first, last);
    m_inputDims = slice.input.dims;
    m_classes = slice.classes;
    auto named = m_net->named_parameters();
    for (size_t i = 0; i < slice.layers.size(); ++i) {
        LayerSlot slot{slice.layers[i], -1};
        // The layer's parameters in the order its module registered them, which is the
        // order applyLayer() takes them in.
        const std::string prefix = std::to_string(first + i) + ".";
        for (const auto &item : named) {
            if (item.key().rfind(prefix, 0) != 0)
                continue;
            if (slot.weight < 0)
                slot.weight = int(m_live.size());
            m_live.push_back(item.value());
            m_names.push_back(item.key());
        }
        const size_t held = slot.weight < 0 ? 0 : m_live.size() - size_t(slot.weight);
        if (held != layerTensorCount(slot.spec))
            throw Error("layer " + std::to_string(first + i) + " (" + slot.spec.describe() + ") holds " +
                        std::to_string(held) + " tensors, expected " + std::to_string(layerTensorCount(slot.spec)));
        m_layers.push_back(slot);
    }
    // The input gradient is only worth computing (and sending) when a stage above has
    // parameters to train with it.
    const auto costs = model::layerCosts(spec, 1);
    for (size_t i = 0; i < first; ++i)
        m_needsInputGradient = m_needsInputGradient || costs[i].parameters > 0;
}

// The layers applied with explicit weights, so that a microbatch can run on a stashed
// version; applyLayer() is what the unsplit model's LayerStack applies too.
torch::Tensor StageCompute::run(torch::Tensor x, const std::vector<torch::Tensor> &w, bool training) const
{
    for (const auto &layer : m_layers)
        x = applyLayer(layer.spec, x, layer.weight < 0 ? nullptr : &w[size_t(layer.weight)], training);
    return x;
}

torch::Tensor StageCompute::prepareInput(const torch::Tensor &input) const
{
    const bool shapeOk = input.dim() == int64_t(m_inputDims.size()) + 1 && input.size(0) > 0 &&
                         std::equal(m_inputDims.begin(), m_inputDims.end(), input.sizes().begin() + 1);
    if (input.scalar_type() != torch::kFloat32 || !shapeOk)
        throw Error("stage input is " + std::string(c10::toString(input.scalar_type())) + " " + shapeOf(input) +
                    ", expected float32 Bx" + shapeText(m_inputDims));
    if (!m_needsInputGradient)
        return input;
    return input.detach().requires_grad_(true);
}

std::shared_ptr<StageCompute::WeightSet> StageCompute::snapshotFor(int64_t horizon)
{
    if (m_snapshot && m_snapshot->version == version() && m_snapshot->horizon == horizon)
        return m_snapshot;
    torch::NoGradGuard noGrad;
    std::shared_ptr<WeightSet> set;
    for (auto &candidate : m_sets)
        if (candidate.use_count() == 1) { // no microbatch uses it any more, nor m_snapshot
            set = candidate;
            break;
        }
    if (!set) {
        set = std::make_shared<WeightSet>();
        for (const auto &p : m_live)
            set->tensors.push_back(torch::empty_like(p).requires_grad_(true));
        m_sets.push_back(set);
    }
    m_optimizer.predictInto(set->tensors, double(horizon));
    set->version = version();
    set->horizon = horizon;
    m_snapshot = set;
    return set;
}

torch::Tensor StageCompute::forward(int64_t id, const torch::Tensor &input)
{
    if (m_records.count(id))
        throw Error("microbatch " + std::to_string(id) + " arrived twice");
    Record r;
    r.version = version();
    // Backwards come back in the order of their forwards, so the steps this stage takes
    // before this microbatch's backward are known now: one per `accumulation` backwards
    // of the microbatches already in flight.
    const int64_t horizon = m_predict ? (m_accumulated + int64_t(m_records.size())) / m_accumulation : 0;
    r.weights = snapshotFor(horizon);
    r.input = prepareInput(input);
    r.output = run(r.input, r.weights->tensors, true);
    torch::Tensor out = r.output;
    m_records.emplace(id, std::move(r));
    return out;
}

StageCompute::BackwardResult StageCompute::backward(int64_t id, const torch::Tensor &outputGradient)
{
    auto it = m_records.find(id);
    if (it == m_records.end())
        throw Error("a gradient arrived for microbatch " + std::to_string(id) +
                    ", which this stage holds no forward of");
    Record r = std::move(it->second);
    m_records.erase(it);
    BackwardResult result;
    result.staleness = version() - r.version;
    if (r.output.requires_grad()) {
        if (!outputGradient.defined() || !outputGradient.sizes().equals(r.output.sizes()) ||
            outputGradient.scalar_type() != torch::kFloat32)
            throw Error("the gradient for microbatch " + std::to_string(id) + " is " +
                        (outputGradient.defined() ? shapeOf(outputGradient) : std::string("missing")) +
                        ", expected float32 " + shapeOf(r.output));
        std::vector<torch::Tensor> inputs = r.weights->tensors;
        if (m_needsInputGradient)
            inputs.push_back(r.input);
        auto grads = torch::autograd::grad({r.output}, inputs, {outputGradient}, false, false, true);
        if (m_needsInputGradient) {
            result.inputGradient = grads.back();
            grads.pop_back();
        }
        accumulate(grads);
    }
    countBackward(result.staleness);
    return result;
}

StageCompute::LeafResult StageCompute::trainLeaf(const torch::Tensor &input, const torch::Tensor &labels)
{
    const torch::Tensor x = prepareInput(input);
    if (labels.scalar_type() != torch::kInt64 || labels.dim() != 1 || labels.size(0) != x.size(0))
        throw Error("labels are " + std::string(c10::toString(labels.scalar_type())) + " " + shapeOf(labels) +
                    ", expected int64 of the batch's " + std::to_string(x.size(0)) + " samples");
    if (labels.min().item<int64_t>() < 0 || labels.max().item<int64_t>() >= m_classes)
        throw Error("a label lies outside the model's " + std::to_string(m_classes) + " classes");
    torch::Tensor loss = torch::nn::functional::cross_entropy(run(x, m_live, true), labels);
    LeafResult result;
    result.loss = loss.item<double>();
    // Averaging over the accumulated microbatches makes k microbatches of B the same
    // update as one batch of kB.
    if (m_accumulation > 1)
        loss = loss / double(m_accumulation);
    std::vector<torch::Tensor> inputs = m_live;
    if (m_needsInputGradient)
        inputs.push_back(x);
    auto grads = torch::autograd::grad({loss}, inputs, {}, false, false, true);
    if (m_needsInputGradient) {
        result.inputGradient = grads.back();
        grads.pop_back();
    }
    accumulate(grads);
    countBackward(0);
    return result;
}

void StageCompute::accumulate(const std::vector<torch::Tensor> &gradients)
{
    torch::NoGradGuard noGrad;
    for (size_t i = 0; i < m_live.size(); ++i) {
        torch::Tensor &grad = m_live[i].mutable_grad();
        const torch::Tensor &g = gradients[i];
        if (m_accumulated == 0) {
            // The first gradient after a step replaces the old one: the same values as
            // zeroing and adding, without two passes over the buffers.
            if (g.defined())
                grad = g;
            else if (grad.defined())
                grad.zero_();
        } else if (g.defined()) {
            if (grad.defined())
                grad.add_(g);
            else
                grad = g;
        }
    }
}

void StageCompute::countBackward(int64_t staleness)
{
    m_rateScaleSum += m_scaleRate ? staleRateScale(staleness) : 1.0;
    if (++m_accumulated >= m_accumulation)
        flush();
}

bool StageCompute::flush()
{
    if (m_accumulated == 0)
        return false;
    m_optimizer.step(std::clamp(m_rateScaleSum / double(m_accumulated), 1e-6, 1.0));
    m_accumulated = 0;
    m_rateScaleSum = 0;
    return true;
}

torch::Tensor StageCompute::infer(const torch::Tensor &input)
{
    torch::NoGradGuard noGrad;
    return run(prepareInput(input).detach(), m_live, false);
}

void StageCompute::keepForTest()
{
    torch::NoGradGuard noGrad;
    m_kept.clear(); // never two copies at once
    for (size_t i = 0; i < m_live.size(); ++i)
        // setConsensus() replaces its tensors rather than writing into them: sharing is safe.
        m_kept.push_back(i < m_consensus.size() && m_consensus[i].defined() ? m_consensus[i]
                                                                            : m_live[i].detach().clone());
}

void StageCompute::setConsensus(const std::vector<NamedTensor> &weights, int64_t version)
{
    if (weights.empty())
        return dropConsensus();
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> fresh(m_live.size());
    for (const auto &w : weights) {
        const size_t index = indexOf(w.name);
        torch::Tensor t = torch::empty_like(m_live[index]);
        copyInto(t, w); // checks dtype and shape first
        fresh[index] = std::move(t);
    }
    m_consensus = std::move(fresh);
    m_consensusVersion = version;
}

void StageCompute::dropConsensus()
{
    m_consensus.clear();
    m_consensusVersion = -1;
}

torch::Tensor StageCompute::inferKept(const torch::Tensor &input)
{
    torch::NoGradGuard noGrad;
    return run(prepareInput(input).detach(), m_kept.empty() ? m_live : m_kept, false);
}

void StageCompute::setParameters(const std::vector<NamedTensor> &parameters)
{
    std::vector<std::pair<size_t, const NamedTensor *>> targets;
    for (const auto &p : parameters) {
        const size_t index = indexOf(p.name);
        checkCompatible(m_live[index], p);
        targets.emplace_back(index, &p);
    }
    for (auto &[index, p] : targets)
        copyInto(m_live[index], *p);
    m_snapshot.reset(); // a cached forward snapshot of the old values must not be reused
}

size_t StageCompute::indexOf(const std::string &name) const
{
    const auto it = std::find(m_names.begin(), m_names.end(), name);
    if (it == m_names.end())
        throw Error("this stage holds no parameter '" + name + "'");
    return size_t(it - m_names.begin());
}

void StageCompute::dropInFlight()
{
    m_records.clear();
    m_snapshot.reset();
}

std::vector<NamedTensor> StageCompute::parameters() const
{
    std::vector<NamedTensor> out;
    for (size_t i = 0; i < m_live.size(); ++i)
        out.push_back(toNamed(m_names[i], m_live[i]));
    return out;
}

} // namespace rookery::train
