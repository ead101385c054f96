// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/layer_stack.h"

#include <cmath>

#include "engine/common/error.h"
#include "engine/train/layer_ops.h"

namespace rookery::train {
namespace {

using model::LayerKind;

// PyTorch's default for Linear and Conv2d (kaiming_uniform with a = sqrt(5)) reduces to
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases alike; we draw it from a
// generator of our own so the result does not depend on what else used the global one.
at::Generator layerGenerator(uint64_t seed, size_t index)
{
    return at::detail::createCPUGenerator(seed * 0x9E3779B97F4A7C15ull + index * 0xBF58476D1CE4E5B9ull + 1);
}

void initUniform(torch::nn::Module &module, int64_t fanIn, uint64_t seed, size_t index)
{
    torch::NoGradGuard noGrad;
    auto generator = layerGenerator(seed, index);
    const double bound = 1.0 / std::sqrt(double(fanIn));
    for (auto &p : module.parameters())
        p.uniform_(-bound, bound, generator);
}

// The two convolutions of a residual block, registered as "conv1" and "conv2" so that
// their names ("2.conv1.weight") stay those of earlier versions' checkpoints.
class ResidualBlockImpl : public torch::nn::Module
{
public:
    ResidualBlockImpl(int64_t channels, int64_t kernel)
        : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, channels, kernel))))
        , conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, channels, kernel))))
    { }
    torch::nn::Conv2d conv1, conv2;
};
TORCH_MODULE(ResidualBlock);

// Named tensors of a layer kind that has no module of its own in LibTorch.
class TensorSetImpl : public torch::nn::Module
{
public:
    torch::Tensor add(const std::string &name, torch::Tensor t) { return register_parameter(name, std::move(t)); }
};
TORCH_MODULE(TensorSet);

// A norm's scale 1 and shift 0, as PyTorch starts them.
void addNorm(TensorSetImpl &set, const std::string &prefix, int64_t size)
{
    set.add(prefix + "weight", torch::ones({size}));
    set.add(prefix + "bias", torch::zeros({size}));
}

// A linear map's weight and bias, drawn as PyTorch's Linear draws them.
void addLinear(TensorSetImpl &set, const std::string &prefix, int64_t in, int64_t out, at::Generator &generator)
{
    const double bound = 1.0 / std::sqrt(double(in));
    set.add(prefix + "weight", torch::empty({out, in}).uniform_(-bound, bound, generator));
    set.add(prefix + "bias", torch::empty({out}).uniform_(-bound, bound, generator));
}

std::shared_ptr<torch::nn::Module> makeWeights(const model::LayerSpec &l, int64_t patches, uint64_t seed, size_t index)
{
    torch::NoGradGuard noGrad;
    switch (l.kind) {
    case LayerKind::LayerNorm: {
        auto m = torch::nn::LayerNorm(torch::nn::LayerNormOptions({l.in}).eps(model::kLayerNormEps));
        return m.ptr();
    }
    case LayerKind::BatchNorm: {
        TensorSet set;
        addNorm(*set, "", l.in);
        return set.ptr();
    }
    case LayerKind::Linear: {
        auto m = torch::nn::Linear(l.in, l.out);
        initUniform(*m, l.in, seed, index);
        return m.ptr();
    }
    case LayerKind::Conv2d: {
        auto m = torch::nn::Conv2d(torch::nn::Conv2dOptions(l.in, l.out, l.kernel).stride(l.stride).padding(l.padding));
        initUniform(*m, l.in * l.kernel * l.kernel, seed, index);
        return m.ptr();
    }
    case LayerKind::Residual: {
        auto m = ResidualBlock(l.in, l.kernel);
        initUniform(*m, l.in * l.kernel * l.kernel, seed, index);
        return m.ptr();
    }
    case LayerKind::PatchEmbed: { // a convolution's draw, then positions ~ N(0, 0.02) as ViT's
        TensorSet set;
        auto generator = layerGenerator(seed, index);
        const double bound = 1.0 / std::sqrt(double(l.in * l.kernel * l.kernel));
        set->add("weight", torch::empty({l.out, l.in, l.kernel, l.kernel}).uniform_(-bound, bound, generator));
        set->add("bias", torch::empty({l.out}).uniform_(-bound, bound, generator));
        set->add("position", torch::empty({patches, l.out}).normal_(0.0, 0.02, generator));
        return set.ptr();
    }
    case LayerKind::Encoder: {
        TensorSet set;
        auto generator = layerGenerator(seed, index);
        addNorm(*set, "norm1_", l.in);
        addLinear(*set, "qkv_", l.in, 3 * l.in, generator);
        addLinear(*set, "proj_", l.in, l.in, generator);
        addNorm(*set, "norm2_", l.in);
        addLinear(*set, "mlp1_", l.in, l.hidden, generator);
        addLinear(*set, "mlp2_", l.hidden, l.in, generator);
        return set.ptr();
    }
    default:
        break;
    }
    if (layerTensorCount(l) == 0)
        return nullptr;
    throw Error("layer " + std::to_string(index) + " is of a kind this build cannot make");
}

} // namespace

LayerStackImpl::LayerStackImpl(const model::ModelSpec &spec, size_t firstIndex, uint64_t seed)
    : m_firstIndex(firstIndex)
{
    const auto costs = model::layerCosts(spec, 1);
    for (size_t i = 0; i < spec.layers.size(); ++i) {
        const auto &l = spec.layers[i];
        const size_t index = firstIndex + i;
        const int64_t patches = l.kind == LayerKind::PatchEmbed ? costs[i].outputShape.dims[0] : 0;
        auto weights = makeWeights(l, patches, seed, index);
        if (weights)
            register_module(std::to_string(index), weights);
        m_layers.push_back({l, std::move(weights)});
    }
}

torch::Tensor LayerStackImpl::forward(torch::Tensor x)
{
    for (auto &layer : m_layers) {
        std::vector<torch::Tensor> w;
        if (layer.weights)
            w = layer.weights->parameters();
        x = applyLayer(layer.spec, x, w.data(), is_training());
    }
    return x;
}

} // namespace rookery::train
