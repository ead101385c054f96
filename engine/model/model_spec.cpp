// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/model/model_spec.h"

#include <cmath>
#include <cstdio>
#include <numeric>

#include "engine/common/error.h"

namespace rookery::model {
namespace {

[[noreturn]] void badLayer(size_t index, const LayerSpec &layer, const std::string &what)
{
    throw Error("model layer " + std::to_string(index) + " (" + layer.describe() + "): " + what);
}

constexpr double kFloat = sizeof(float);

// The shape a layer produces from `in`, plus its parameter count, forward FLOPs per
// sample and the bytes per sample its training forward keeps for the backward. Those
// bytes follow what PyTorch's autograd saves, checked against its profiler for every
// kind by tst_layer_costs: a layer's input is its predecessor's, so not counted again.
struct LayerEffect
{
    Shape out;
    int64_t parameters = 0;
    double flopsPerSample = 0;
    double savedPerSample = -1; ///< -1: the output alone
};

LayerEffect applyLayer(size_t index, const LayerSpec &layer, const Shape &in)
{
    LayerEffect e;
    switch (layer.kind) {
    case LayerKind::Flatten: // a view of its input
        e.out = Shape{{in.elements()}};
        e.savedPerSample = 0;
        return e;
    case LayerKind::ReLU:
        e.out = in;
        e.flopsPerSample = double(in.elements());
        return e;
    // Element-wise costs are estimates, in FLOPs per value: erf's polynomial for GELU,
    // tanh's; a norm's mean, variance, normalisation, scale and shift.
    case LayerKind::GELU:
        e.out = in;
        e.flopsPerSample = 8.0 * double(in.elements());
        return e;
    case LayerKind::Tanh:
        e.out = in;
        e.flopsPerSample = 4.0 * double(in.elements());
        return e;
    case LayerKind::LayerNorm:
        if (layer.in <= 0)
            badLayer(index, layer, "its normalised size must be positive");
        if (in.dims.empty() || in.dims.back() != layer.in)
            badLayer(index, layer,
                     "normalises the last " + std::to_string(layer.in) + " values but receives " + in.describe());
        e.out = in;
        e.parameters = 2 * layer.in;
        e.flopsPerSample = 8.0 * double(in.elements());
        // The output, and a mean and an inverse deviation per normalised row.
        e.savedPerSample = kFloat * double(in.elements() + 2 * in.elements() / layer.in);
        return e;
    case LayerKind::BatchNorm:
        if (layer.in <= 0)
            badLayer(index, layer, "its channels must be positive");
        if ((in.dims.size() != 1 && in.dims.size() != 3) || in.dims[0] != layer.in)
            badLayer(index, layer,
                     "expects " + std::to_string(layer.in) + " features (F) or channels (CxHxW) but receives " +
                         in.describe());
        e.out = in;
        e.parameters = 2 * layer.in;
        e.flopsPerSample = 8.0 * double(in.elements());
        return e;
    case LayerKind::Dropout:
        if (!(layer.rate >= 0 && layer.rate < 1))
            badLayer(index, layer, "its rate must be at least 0 and below 1");
        e.out = in;
        e.flopsPerSample = 2.0 * double(in.elements());
        e.savedPerSample = 2 * kFloat * double(in.elements()); // the output and its float mask
        return e;
    case LayerKind::TokenMean:
        if (in.dims.size() != 2)
            badLayer(index, layer, "expects tokens (TxD) but receives " + in.describe());
        e.out = Shape{{in.dims[1]}};
        e.flopsPerSample = double(in.elements());
        return e;
    case LayerKind::PatchEmbed: {
        if (layer.in <= 0 || layer.out <= 0 || layer.kernel <= 0)
            badLayer(index, layer, "channels, width and patch size must be positive");
        if (in.dims.size() != 3 || in.dims[0] != layer.in)
            badLayer(index, layer,
                     "expects " + std::to_string(layer.in) + " input channels (CxHxW) but receives " + in.describe());
        const int64_t patches = (in.dims[1] / layer.kernel) * (in.dims[2] / layer.kernel);
        if (patches <= 0)
            badLayer(index, layer, "patch larger than its input " + in.describe());
        const int64_t patchValues = layer.in * layer.kernel * layer.kernel;
        e.out = Shape{{patches, layer.out}};
        e.parameters = patchValues * layer.out + layer.out + patches * layer.out;
        e.flopsPerSample = 2.0 * double(patchValues) * double(patches * layer.out) + double(patches * layer.out);
        return e;
    }
    case LayerKind::Encoder: {
        if (layer.in <= 0 || layer.out != layer.in || layer.hidden <= 0 || layer.heads <= 0 ||
            layer.in % layer.heads != 0)
            badLayer(index, layer,
                     "needs a positive width (out equal to in), hidden units, and heads dividing the width");
        if (in.dims.size() != 2 || in.dims[1] != layer.in)
            badLayer(index, layer,
                     "expects tokens of " + std::to_string(layer.in) + " values (TxD) but receives " + in.describe());
        const double t = double(in.dims[0]), d = double(layer.in), h = double(layer.hidden),
                     heads = double(layer.heads);
        e.out = in;
        e.parameters = 4 * layer.in * layer.in + 2 * layer.in * layer.hidden + 9 * layer.in + layer.hidden;
        // Matrix products: q, k, v and the projection (8TD^2), the MLP (4TDH), scores
        // and their weighted sum (4T^2D); then scale and softmax over the scores, two
        // norms, two sums and GELU, as estimated for the layers of their own.
        e.flopsPerSample = 8 * t * d * d + 4 * t * d * h + 4 * t * t * d + 6 * heads * t * t + 18 * t * d + 8 * t * h;
        // Kept for the backward: each norm's output and its rows' mean and deviation; q,
        // k and v as the heads' contiguous copies (the projection itself is freed); the
        // attention weights after the softmax; the heads' output merged; the first sum;
        // the MLP's hidden values before and after GELU; and the output.
        e.savedPerSample =
            kFloat * (2 * (t * d + 2 * t) + 3 * t * d + heads * t * t + t * d + t * d + 2 * t * h + t * d);
        return e;
    }
    case LayerKind::Linear:
        if (layer.in <= 0 || layer.out <= 0)
            badLayer(index, layer, "features must be positive");
        if (in.dims.size() != 1 || in.dims[0] != layer.in)
            badLayer(index, layer, "expects " + std::to_string(layer.in) + " features but receives " + in.describe());
        e.out = Shape{{layer.out}};
        e.parameters = layer.in * layer.out + layer.out;
        e.flopsPerSample = 2.0 * double(layer.in) * double(layer.out);
        return e;
    case LayerKind::Conv2d: {
        if (layer.in <= 0 || layer.out <= 0 || layer.kernel <= 0 || layer.stride <= 0 || layer.padding < 0)
            badLayer(index, layer, "channels, kernel and stride must be positive");
        if (in.dims.size() != 3 || in.dims[0] != layer.in)
            badLayer(index, layer,
                     "expects " + std::to_string(layer.in) + " input channels (CxHxW) but receives " + in.describe());
        const int64_t h = (in.dims[1] + 2 * layer.padding - layer.kernel) / layer.stride + 1;
        const int64_t w = (in.dims[2] + 2 * layer.padding - layer.kernel) / layer.stride + 1;
        if (h <= 0 || w <= 0)
            badLayer(index, layer, "kernel larger than its input " + in.describe());
        e.out = Shape{{layer.out, h, w}};
        e.parameters = layer.in * layer.out * layer.kernel * layer.kernel + layer.out;
        e.flopsPerSample = 2.0 * double(layer.in * layer.kernel * layer.kernel) * double(layer.out * h * w);
        return e;
    }
    case LayerKind::MaxPool2d:
    case LayerKind::AvgPool2d: {
        if (layer.kernel <= 0 || layer.stride <= 0)
            badLayer(index, layer, "kernel and stride must be positive");
        if (in.dims.size() != 3)
            badLayer(index, layer, "expects a CxHxW input but receives " + in.describe());
        const int64_t h = (in.dims[1] - layer.kernel) / layer.stride + 1;
        const int64_t w = (in.dims[2] - layer.kernel) / layer.stride + 1;
        if (h <= 0 || w <= 0)
            badLayer(index, layer, "kernel larger than its input " + in.describe());
        e.out = Shape{{in.dims[0], h, w}};
        e.flopsPerSample = double(e.out.elements()) * layer.kernel * layer.kernel;
        if (layer.kind == LayerKind::MaxPool2d) // and the index of each maximum
            e.savedPerSample = (kFloat + sizeof(int64_t)) * double(e.out.elements());
        return e;
    }
    case LayerKind::Residual: {
        if (layer.in <= 0 || layer.out != layer.in || layer.kernel <= 0 || layer.kernel % 2 == 0)
            badLayer(index, layer, "needs positive channels, out equal to in, and an odd kernel");
        if (in.dims.size() != 3 || in.dims[0] != layer.in)
            badLayer(index, layer,
                     "expects " + std::to_string(layer.in) + " input channels (CxHxW) but receives " + in.describe());
        e.out = in;
        const double convWeights = double(layer.in * layer.in * layer.kernel * layer.kernel);
        e.parameters = 2 * (layer.in * layer.in * layer.kernel * layer.kernel + layer.in);
        // Two convolutions at full size, their two ReLUs and the sum.
        e.flopsPerSample = 2 * 2.0 * convWeights * double(in.dims[1] * in.dims[2]) + 3.0 * double(in.elements());
        e.savedPerSample = 2 * kFloat * double(in.elements()); // the inner ReLU's output and the block's
        return e;
    }
    }
    badLayer(index, layer, "unknown layer kind");
}

} // namespace

std::string_view layerKindName(LayerKind kind)
{
    switch (kind) {
    case LayerKind::Flatten:
        return "Flatten";
    case LayerKind::Linear:
        return "Linear";
    case LayerKind::ReLU:
        return "ReLU";
    case LayerKind::Conv2d:
        return "Conv2d";
    case LayerKind::MaxPool2d:
        return "MaxPool2d";
    case LayerKind::Residual:
        return "Residual";
    case LayerKind::GELU:
        return "GELU";
    case LayerKind::Tanh:
        return "Tanh";
    case LayerKind::AvgPool2d:
        return "AvgPool2d";
    case LayerKind::LayerNorm:
        return "LayerNorm";
    case LayerKind::BatchNorm:
        return "BatchNorm";
    case LayerKind::Dropout:
        return "Dropout";
    case LayerKind::PatchEmbed:
        return "PatchEmbed";
    case LayerKind::Encoder:
        return "Encoder";
    case LayerKind::TokenMean:
        return "TokenMean";
    }
    return "Unknown";
}

std::string LayerSpec::describe() const
{
    std::string name(layerKindName(kind));
    switch (kind) {
    case LayerKind::Linear:
        return name + "(" + std::to_string(in) + "->" + std::to_string(out) + ")";
    case LayerKind::Conv2d:
        return name + "(" + std::to_string(in) + "->" + std::to_string(out) + ", k" + std::to_string(kernel) + " s" +
               std::to_string(stride) + " p" + std::to_string(padding) + ")";
    case LayerKind::MaxPool2d:
    case LayerKind::AvgPool2d:
        return name + "(k" + std::to_string(kernel) + " s" + std::to_string(stride) + ")";
    case LayerKind::LayerNorm:
    case LayerKind::BatchNorm:
        return name + "(" + std::to_string(in) + ")";
    case LayerKind::Dropout: {
        char rateText[32];
        std::snprintf(rateText, sizeof rateText, "%g", rate);
        return name + "(" + rateText + ")";
    }
    case LayerKind::PatchEmbed:
        return name + "(" + std::to_string(in) + "->" + std::to_string(out) + ", patch " + std::to_string(kernel) + ")";
    case LayerKind::Encoder:
        return name + "(" + std::to_string(in) + ", " + std::to_string(heads) + " heads, hidden " +
               std::to_string(hidden) + ")";
    case LayerKind::Residual:
        return name + "(" + std::to_string(in) + ", k" + std::to_string(kernel) + ")";
    default:
        return name;
    }
}

int64_t Shape::elements() const { return std::accumulate(dims.begin(), dims.end(), int64_t(1), std::multiplies<>()); }

std::string Shape::describe() const
{
    std::string s;
    for (auto d : dims)
        s += (s.empty() ? "" : "x") + std::to_string(d);
    return s.empty() ? "scalar" : s;
}

std::vector<LayerCost> layerCosts(const ModelSpec &spec, int64_t batchSize)
{
    if (spec.layers.empty())
        throw Error("model '" + spec.name + "' has no layers");
    if (spec.input.dims.empty())
        throw Error("model '" + spec.name + "' has no input shape");
    for (auto d : spec.input.dims)
        if (d <= 0)
            throw Error("model '" + spec.name + "' has a non-positive input dimension: " + spec.input.describe());
    if (batchSize <= 0)
        throw Error("batch size must be positive");
    std::vector<LayerCost> costs;
    Shape shape = spec.input;
    for (size_t i = 0; i < spec.layers.size(); ++i) {
        LayerEffect e = applyLayer(i, spec.layers[i], shape);
        const int64_t outputBytes = e.out.elements() * batchSize * int64_t(sizeof(float));
        const int64_t saved =
            e.savedPerSample < 0 ? outputBytes : int64_t(std::ceil(e.savedPerSample * double(batchSize)));
        costs.push_back({e.parameters, e.flopsPerSample * double(batchSize), e.out, outputBytes, saved});
        shape = e.out;
    }
    if (spec.classes > 0 && !(shape.dims.size() == 1 && shape.dims[0] == spec.classes))
        throw Error("model '" + spec.name + "' ends in " + shape.describe() + " outputs but has " +
                    std::to_string(spec.classes) + " classes");
    return costs;
}

void validate(const ModelSpec &spec) { (void)layerCosts(spec, 1); }

int64_t parameterCount(const ModelSpec &spec)
{
    int64_t total = 0;
    for (const auto &c : layerCosts(spec, 1))
        total += c.parameters;
    return total;
}

ModelSpec sliceOf(const ModelSpec &spec, size_t first, size_t last)
{
    if (first >= last || last > spec.layers.size())
        throw Error("invalid layer range [" + std::to_string(first) + ", " + std::to_string(last) + ") of model '" +
                    spec.name + "' with " + std::to_string(spec.layers.size()) + " layers");
    const auto costs = layerCosts(spec, 1);
    ModelSpec out;
    out.name = spec.name + "[" + std::to_string(first) + ":" + std::to_string(last) + "]";
    out.input = first == 0 ? spec.input : costs[first - 1].outputShape;
    out.classes = last == spec.layers.size() ? spec.classes : 0;
    out.layers.assign(spec.layers.begin() + long(first), spec.layers.begin() + long(last));
    return out;
}

} // namespace rookery::model
