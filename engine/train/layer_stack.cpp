// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/layer_stack.h"

#include <cmath>

#include "engine/common/error.h"

namespace rookery::train {
namespace {

using model::LayerKind;

// PyTorch's default for Linear and Conv2d (kaiming_uniform with a = sqrt(5)) reduces to
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases alike; we draw it from a
// generator of our own so the result does not depend on what else used the global one.
void initUniform(torch::nn::Module &module, int64_t fanIn, uint64_t seed, size_t index)
{
    torch::NoGradGuard noGrad;
    auto generator = at::detail::createCPUGenerator(seed * 0x9E3779B97F4A7C15ull + index * 0xBF58476D1CE4E5B9ull + 1);
    const double bound = 1.0 / std::sqrt(double(fanIn));
    for (auto &p : module.parameters())
        p.uniform_(-bound, bound, generator);
}

// y = relu(x + conv2(relu(conv1(x)))): StageCompute::run applies the same with
// explicit weights.
class ResidualBlockImpl : public torch::nn::Module
{
public:
    ResidualBlockImpl(int64_t channels, int64_t kernel)
        : conv1(register_module(
              "conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, channels, kernel).padding(kernel / 2))))
        , conv2(register_module(
              "conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, channels, kernel).padding(kernel / 2))))
    { }
    torch::Tensor forward(torch::Tensor x) { return torch::relu(x + conv2(torch::relu(conv1(x)))); }

    torch::nn::Conv2d conv1, conv2;
};
TORCH_MODULE(ResidualBlock);

} // namespace

LayerStackImpl::LayerStackImpl(const model::ModelSpec &spec, size_t firstIndex, uint64_t seed)
    : m_firstIndex(firstIndex)
{
    for (size_t i = 0; i < spec.layers.size(); ++i) {
        const auto &l = spec.layers[i];
        const size_t index = firstIndex + i;
        const std::string name = std::to_string(index);
        switch (l.kind) {
        case LayerKind::Flatten:
            m_layers.emplace_back(register_module(name, torch::nn::Flatten()));
            break;
        case LayerKind::ReLU:
            m_layers.emplace_back(register_module(name, torch::nn::ReLU()));
            break;
        case LayerKind::GELU:
            m_layers.emplace_back(register_module(name, torch::nn::GELU()));
            break;
        case LayerKind::Tanh:
            m_layers.emplace_back(register_module(name, torch::nn::Tanh()));
            break;
        case LayerKind::LayerNorm: // scale 1, shift 0, as PyTorch starts them
            m_layers.emplace_back(register_module(
                name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({l.in}).eps(model::kLayerNormEps))));
            break;
        case LayerKind::AvgPool2d:
            m_layers.emplace_back(
                register_module(name, torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(l.kernel).stride(l.stride))));
            break;
        case LayerKind::Linear: {
            auto m = register_module(name, torch::nn::Linear(l.in, l.out));
            initUniform(*m, l.in, seed, index);
            m_layers.emplace_back(m);
            break;
        }
        case LayerKind::Conv2d: {
            auto m = register_module(
                name,
                torch::nn::Conv2d(torch::nn::Conv2dOptions(l.in, l.out, l.kernel).stride(l.stride).padding(l.padding)));
            initUniform(*m, l.in * l.kernel * l.kernel, seed, index);
            m_layers.emplace_back(m);
            break;
        }
        case LayerKind::MaxPool2d:
            m_layers.emplace_back(
                register_module(name, torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(l.kernel).stride(l.stride))));
            break;
        case LayerKind::Residual: {
            auto m = register_module(name, ResidualBlock(l.in, l.kernel));
            initUniform(*m, l.in * l.kernel * l.kernel, seed, index);
            m_layers.emplace_back(m);
            break;
        }
        }
    }
}

torch::Tensor LayerStackImpl::forward(torch::Tensor x)
{
    for (auto &layer : m_layers)
        x = layer.forward(x);
    return x;
}

} // namespace rookery::train
