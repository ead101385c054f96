// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/optimizer.h"

#include <cmath>
#include <unordered_map>

#include "engine/common/error.h"
#include "engine/train/torch_convert.h"

namespace rookery::train {

Optimizer::Optimizer(std::vector<std::pair<std::string, torch::Tensor>> parameters, OptimizerConfig config)
    : m_config(config)
{
    validate(config);
    torch::NoGradGuard noGrad;
    for (auto &[name, p] : parameters) {
        Slot s{name, p, torch::zeros_like(p), {}};
        if (config.kind == OptimizerKind::AdamW)
            s.buf2 = torch::zeros_like(p);
        m_slots.push_back(std::move(s));
    }
}

void Optimizer::zeroGrad()
{
    // Zero in place rather than dropping the gradients: backward then accumulates into
    // the same buffers instead of allocating megabytes afresh (and page-faulting them
    // in) on every step, which cost ~10% of MLP throughput.
    for (auto &s : m_slots)
        if (s.param.grad().defined())
            s.param.mutable_grad().zero_();
}

bool Optimizer::clipGradients()
{
    double squares = 0;
    for (const auto &s : m_slots)
        if (s.param.grad().defined()) {
            const double n = s.param.grad().norm().item<double>();
            squares += n * n;
        }
    const double norm = std::sqrt(squares);
    if (!std::isfinite(norm)) {
        ++m_skipped;
        return false;
    }
    if (norm <= 0)
        return true;
    double kept = norm;
    if (m_normsSeen >= kClipWarmup) {
        const double bound = kClipFactor * std::exp(m_logNormScale);
        if (norm > bound) {
            for (auto &s : m_slots)
                if (s.param.grad().defined())
                    s.param.mutable_grad().mul_(bound / norm);
            kept = bound;
            ++m_clipped;
        }
    }
    // The scale: a plain mean of the logs over the warm-up, then a slow running mean.
    ++m_normsSeen;
    const double weight = m_normsSeen <= kClipWarmup ? 1.0 / double(m_normsSeen) : 0.02;
    m_logNormScale += weight * (std::log(kept) - m_logNormScale);
    return true;
}

void Optimizer::step(double rateScale)
{
    if (!(rateScale > 0 && rateScale <= 1))
        throw Error("an optimizer step's rate scale must lie in (0, 1], got " + std::to_string(rateScale));
    torch::NoGradGuard noGrad;
    ++m_step;
    m_lastRateScale = rateScale;
    if (!clipGradients())
        return;
    const double lr = m_config.learningRate * rateScale;
    if (m_config.kind == OptimizerKind::Sgd)
        stepSgd(lr);
    else
        stepAdamW(lr);
}

void Optimizer::stepSgd(double lr)
{
    const double momentum = m_config.momentum, wd = m_config.weightDecay;
    for (auto &s : m_slots) {
        const torch::Tensor &grad = s.param.grad();
        if (!grad.defined())
            continue;
        torch::Tensor d = wd != 0 ? grad.add(s.param, wd) : grad;
        if (momentum != 0) {
            // PyTorch starts the buffer as a copy of the first gradient; 0 * m + g is that.
            s.buf1.mul_(momentum).add_(d);
            s.param.add_(s.buf1, -lr);
        } else {
            s.param.add_(d, -lr);
        }
    }
}

void Optimizer::stepAdamW(double lr)
{
    const double b1 = m_config.beta1, b2 = m_config.beta2;
    const double bias1 = 1 - std::pow(b1, double(m_step));
    const double bias2Sqrt = std::sqrt(1 - std::pow(b2, double(m_step)));
    const double stepSize = lr / bias1;
    for (auto &s : m_slots) {
        const torch::Tensor &grad = s.param.grad();
        if (!grad.defined())
            continue;
        s.param.mul_(1 - lr * m_config.weightDecay);
        s.buf1.mul_(b1).add_(grad, 1 - b1);
        s.buf2.mul_(b2).addcmul_(grad, grad, 1 - b2);
        torch::Tensor denom = (s.buf2.sqrt() / bias2Sqrt).add_(m_config.epsilon);
        s.param.addcdiv_(s.buf1, denom, -stepSize);
    }
}

void Optimizer::predictInto(std::vector<torch::Tensor> &into, double steps) const
{
    if (into.size() != m_slots.size())
        throw Error("predictInto() needs " + std::to_string(m_slots.size()) + " tensors, got " +
                    std::to_string(into.size()));
    torch::NoGradGuard noGrad;
    const double lr = m_config.learningRate * m_lastRateScale; // what each step moves them by now
    const bool sgd = m_config.kind == OptimizerKind::Sgd;
    if (steps <= 0 || m_step == 0 || (sgd && m_config.momentum == 0)) {
        for (size_t i = 0; i < m_slots.size(); ++i)
            into[i].copy_(m_slots[i].param);
        return;
    }
    if (sgd) {
        // While the gradients hold steady so does the buffer, and each step moves the
        // parameters by -lr * buffer. One pass: read both, write the prediction.
        for (size_t i = 0; i < m_slots.size(); ++i)
            at::add_out(into[i], m_slots[i].param, m_slots[i].buf1, -lr * steps);
        return;
    }
    const double bias1 = 1 - std::pow(m_config.beta1, double(m_step));
    const double bias2Sqrt = std::sqrt(1 - std::pow(m_config.beta2, double(m_step)));
    for (size_t i = 0; i < m_slots.size(); ++i) {
        torch::Tensor denom = (m_slots[i].buf2.sqrt() / bias2Sqrt).add_(m_config.epsilon);
        at::addcdiv_out(into[i], m_slots[i].param, m_slots[i].buf1, denom, -lr / bias1 * steps);
    }
}

std::vector<NamedTensor> Optimizer::state() const
{
    std::vector<NamedTensor> out;
    const bool adam = m_config.kind == OptimizerKind::AdamW;
    for (const auto &s : m_slots) {
        out.push_back(toNamed(s.name + (adam ? ".exp_avg" : ".momentum"), s.buf1));
        if (adam)
            out.push_back(toNamed(s.name + ".exp_avg_sq", s.buf2));
    }
    out.push_back(toNamed("step", torch::tensor(m_step, torch::kInt64)));
    return out;
}

void Optimizer::restore(const std::vector<NamedTensor> &state)
{
    std::unordered_map<std::string, const NamedTensor *> byName;
    for (const auto &t : state)
        byName[t.name] = &t;
    auto need = [&](const std::string &name) -> const NamedTensor & {
        auto it = byName.find(name);
        if (it == byName.end())
            throw Error("optimizer state is missing '" + name + "' (saved with another optimizer or model?)");
        return *it->second;
    };
    const bool adam = m_config.kind == OptimizerKind::AdamW;
    // Validate everything before changing anything, so a bad state leaves us intact.
    const NamedTensor &stepTensor = need("step");
    if (stepTensor.dtype != DType::Int64 || stepTensor.data.size() != 8)
        throw Error("optimizer state 'step' is not a single int64");
    for (const auto &s : m_slots) {
        checkCompatible(s.buf1, need(s.name + (adam ? ".exp_avg" : ".momentum")));
        if (adam)
            checkCompatible(s.buf2, need(s.name + ".exp_avg_sq"));
    }
    for (auto &s : m_slots) {
        copyInto(s.buf1, need(s.name + (adam ? ".exp_avg" : ".momentum")));
        if (adam)
            copyInto(s.buf2, need(s.name + ".exp_avg_sq"));
    }
    m_step = fromNamed(stepTensor).item<int64_t>();
}

} // namespace rookery::train
