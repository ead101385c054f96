// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rookery::model {

/// Residual: a block y = relu(x + conv(relu(conv(x)))) of two `kernel` x `kernel`
/// convolutions over `in` channels (stride 1, "same" padding), one unit for the
/// partitioner, which cuts between layers only: never inside the block.
/// GELU (exact, erf) and Tanh: element-wise activations. AvgPool2d: as MaxPool2d, the
/// mean of each window. LayerNorm: normalises over the last dimension, of `in` values,
/// with a learnt scale and shift (PyTorch's LayerNorm, eps 1e-5).
/// BatchNorm: normalises each of `in` channels (CxHxW) or features (F) with the
/// statistics of the batch it is given, in training and evaluation alike (PyTorch's
/// track_running_stats=False): no running statistics to average, checkpoint or send.
/// Dropout: zeroes each value with probability `rate` in training, identity otherwise.
/// PatchEmbed: cuts a CxHxW image into `kernel` x `kernel` patches, projects each to
/// `out` values and adds a learnt position embedding: N x out tokens, N the patches.
/// Encoder: a pre-norm transformer encoder block over T x `in` tokens, one unit for the
/// partitioner: x + attention(norm(x)) with `heads` heads, then x + mlp(norm(x)) with
/// `hidden` GELU units. TokenMean: the mean of T x D tokens, D values (a classifier
/// head's pooling, before its norm and Linear).
enum class LayerKind {
    Flatten,
    Linear,
    ReLU,
    Conv2d,
    MaxPool2d,
    Residual,
    GELU,
    Tanh,
    AvgPool2d,
    LayerNorm,
    BatchNorm,
    Dropout,
    PatchEmbed,
    Encoder,
    TokenMean
};

/// LayerNorm's epsilon, the same in the module and the explicit-weight path.
inline constexpr double kLayerNormEps = 1e-5;
/// BatchNorm's epsilon, likewise.
inline constexpr double kBatchNormEps = 1e-5;

/// Every kind, in declaration order (for parsers and listings).
inline constexpr LayerKind kAllLayerKinds[] = {
    LayerKind::Flatten,   LayerKind::Linear,  LayerKind::ReLU,       LayerKind::Conv2d,    LayerKind::MaxPool2d,
    LayerKind::Residual,  LayerKind::GELU,    LayerKind::Tanh,       LayerKind::AvgPool2d, LayerKind::LayerNorm,
    LayerKind::BatchNorm, LayerKind::Dropout, LayerKind::PatchEmbed, LayerKind::Encoder,   LayerKind::TokenMean};

std::string_view layerKindName(LayerKind kind);

/// One layer of a sequential model. Fields unused by a kind stay zero.
struct LayerSpec
{
    LayerKind kind = LayerKind::ReLU;
    int64_t in = 0;     ///< Linear: input features; Conv2d, Residual, PatchEmbed, BatchNorm: input
                        ///< channels; LayerNorm: normalised size; Encoder: token width
    int64_t out = 0;    ///< Linear: output features; Conv2d: output channels; PatchEmbed: token
                        ///< width; Residual, Encoder: = in
    int kernel = 0;     ///< Conv2d, MaxPool2d, AvgPool2d, Residual (odd); PatchEmbed: patch side
    int stride = 1;     ///< Conv2d, MaxPool2d, AvgPool2d
    int padding = 0;    ///< Conv2d
    int64_t hidden = 0; ///< Encoder: its MLP's hidden units
    int heads = 0;      ///< Encoder: attention heads, dividing `in`
    double rate = 0;    ///< Dropout: the probability of zeroing a value, [0, 1)

    bool operator==(const LayerSpec &) const = default;
    /// "Linear(784->512)", "Conv2d(1->16, k3 s1 p1)", "ReLU".
    std::string describe() const;
};

/// A per-sample tensor shape, without the batch dimension.
struct Shape
{
    std::vector<int64_t> dims;
    int64_t elements() const;
    bool operator==(const Shape &) const = default;
    std::string describe() const; ///< "1x28x28"
};

/// A model as an ordered list of layers, so that it can be cut into pipeline stages.
/// The last layer produces `classes` logits; the loss is cross-entropy.
///
/// Thread safety: a plain value.
struct ModelSpec
{
    std::string name;
    Shape input;
    int classes = 0;
    std::vector<LayerSpec> layers;

    bool operator==(const ModelSpec &) const = default;
};

/// What one layer costs for a given batch size.
struct LayerCost
{
    int64_t parameters = 0;      ///< trainable scalars
    double forwardFlops = 0;     ///< multiply-adds count as two
    Shape outputShape;           ///< per sample
    int64_t activationBytes = 0; ///< fp32 output of the whole batch (what a cut after it sends)
    int64_t savedBytes = 0;      ///< what its training forward keeps until its backward, output
                                 ///< included, for the whole batch (0 for a view such as Flatten)
};

/// Checks that every layer fits the shape it receives and that the model ends in
/// `classes` logits. Throws rookery::Error naming the first bad layer.
void validate(const ModelSpec &spec);

/// Per-layer costs for `batchSize` samples (validates first).
std::vector<LayerCost> layerCosts(const ModelSpec &spec, int64_t batchSize);

int64_t parameterCount(const ModelSpec &spec);

/// Layers [first, last) as a model of their own, whose input is what layer `first` sees.
/// The slice's `classes` is kept only when it includes the last layer, else 0.
ModelSpec sliceOf(const ModelSpec &spec, size_t first, size_t last);

/// JSON text, stable field order; the inverse validates and throws rookery::Error on
/// malformed input.
std::string toJson(const ModelSpec &spec);
ModelSpec modelSpecFromJson(std::string_view json);

} // namespace rookery::model
