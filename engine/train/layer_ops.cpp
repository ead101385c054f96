// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/layer_ops.h"

#include <array>
#include <cmath>

namespace rookery::train {
namespace {

using model::LayerKind;

// A pre-norm transformer encoder block. w: norm 1 (scale, shift), q/k/v projection
// (weight 3D x D, bias), output projection, norm 2, MLP in, MLP out.
torch::Tensor encoderBlock(const model::LayerSpec &l, const torch::Tensor &x, const torch::Tensor *w)
{
    namespace F = torch::nn::functional;
    const int64_t batch = x.size(0), tokens = x.size(1), width = l.in, heads = l.heads;
    const int64_t headWidth = width / heads;
    const auto a = torch::layer_norm(x, {width}, w[0], w[1], model::kLayerNormEps);
    // [B, T, 3D] -> [3, B, heads, T, D/heads]
    const auto qkv = F::linear(a, w[2], w[3]).view({batch, tokens, 3, heads, headWidth}).permute({2, 0, 3, 1, 4});
    const auto scores = torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) * (1.0 / std::sqrt(double(headWidth)));
    const auto mixed = torch::matmul(torch::softmax(scores, -1), qkv[2]); // [B, heads, T, D/heads]
    const auto attended = x + F::linear(mixed.transpose(1, 2).reshape({batch, tokens, width}), w[4], w[5]);
    const auto b = torch::layer_norm(attended, {width}, w[6], w[7], model::kLayerNormEps);
    return attended + F::linear(torch::gelu(F::linear(b, w[8], w[9])), w[10], w[11]);
}

} // namespace

size_t layerTensorCount(const model::LayerSpec &layer)
{
    switch (layer.kind) {
    case LayerKind::Flatten:
    case LayerKind::ReLU:
    case LayerKind::GELU:
    case LayerKind::Tanh:
    case LayerKind::MaxPool2d:
    case LayerKind::AvgPool2d:
    case LayerKind::Dropout:
    case LayerKind::TokenMean:
        return 0;
    case LayerKind::Linear:
    case LayerKind::Conv2d:
    case LayerKind::LayerNorm:
    case LayerKind::BatchNorm:
        return 2;
    case LayerKind::PatchEmbed:
        return 3;
    case LayerKind::Residual:
        return 4;
    case LayerKind::Encoder:
        return 12;
    }
    return 0;
}

// Convolutions name every argument: PyTorch's profiler counts their FLOPs only then
// (tst_layer_costs).
torch::Tensor applyLayer(const model::LayerSpec &l, const torch::Tensor &x, const torch::Tensor *w, bool training)
{
    switch (l.kind) {
    case LayerKind::Flatten:
        return x.flatten(1);
    case LayerKind::ReLU:
        return torch::relu(x);
    case LayerKind::GELU:
        return torch::gelu(x);
    case LayerKind::Tanh:
        return torch::tanh(x);
    case LayerKind::LayerNorm:
        return torch::layer_norm(x, {l.in}, w[0], w[1], model::kLayerNormEps);
    case LayerKind::BatchNorm: // the batch's own statistics, always: no running ones
        return torch::batch_norm(x, w[0], w[1], {}, {}, true, 0.0, model::kBatchNormEps, false);
    case LayerKind::Dropout:
        return torch::dropout(x, l.rate, training);
    case LayerKind::AvgPool2d:
        return torch::avg_pool2d(x, {l.kernel, l.kernel}, {l.stride, l.stride});
    case LayerKind::MaxPool2d:
        return torch::max_pool2d(x, {l.kernel, l.kernel}, {l.stride, l.stride});
    case LayerKind::Linear:
        return torch::nn::functional::linear(x, w[0], w[1]);
    case LayerKind::Conv2d:
        return torch::conv2d(x, w[0], w[1], {l.stride, l.stride}, {l.padding, l.padding}, {1, 1}, 1);
    case LayerKind::Residual: {
        const int64_t pad = l.kernel / 2;
        auto y = torch::relu(torch::conv2d(x, w[0], w[1], {1, 1}, {pad, pad}, {1, 1}, 1));
        return torch::relu(x + torch::conv2d(y, w[2], w[3], {1, 1}, {pad, pad}, {1, 1}, 1));
    }
    case LayerKind::PatchEmbed: { // [B, C, H, W] -> [B, D, H/p, W/p] -> [B, N, D], plus positions
        const std::array<int64_t, 2> patch{l.kernel, l.kernel}, none{0, 0}, one{1, 1};
        return torch::conv2d(x, w[0], w[1], patch, none, one, 1).flatten(2).transpose(1, 2) + w[2];
    }
    case LayerKind::Encoder:
        return encoderBlock(l, x, w);
    case LayerKind::TokenMean:
        return x.mean(1);
    }
    return x;
}

} // namespace rookery::train
