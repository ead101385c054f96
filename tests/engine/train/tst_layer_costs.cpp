// SPDX-License-Identifier: GPL-3.0-or-later
// The cost model (model::layerCosts) against what LibTorch measures: for one instance
// of every layer kind, the parameters the module holds, the FLOPs PyTorch's profiler
// counts in its forward, and the bytes the forward leaves allocated for its backward.
#include <QtTest>

#include <torch/csrc/autograd/profiler_kineto.h>

#include <cmath>

#include "engine/device/compute_threads.h"
#include "engine/model/model_spec.h"
#include "engine/train/layer_stack.h"

using namespace rookery;
using model::LayerKind;

namespace {

constexpr int64_t kBatch = 16;

// One layer of `kind` and the per-sample shape it takes, sized like the layers of the
// reference jobs (smaller, so the test is quick).
model::ModelSpec oneLayerOf(LayerKind kind)
{
    model::ModelSpec s;
    s.name = std::string(model::layerKindName(kind));
    model::LayerSpec l;
    l.kind = kind;
    switch (kind) {
    case LayerKind::Flatten:
    case LayerKind::ReLU:
    case LayerKind::GELU:
    case LayerKind::Tanh:
        s.input = model::Shape{{16, 14, 14}};
        break;
    case LayerKind::Linear:
        s.input = model::Shape{{256}};
        l.in = 256;
        l.out = 128;
        break;
    case LayerKind::Conv2d:
        s.input = model::Shape{{8, 14, 14}};
        l = {kind, 8, 16, 3, 1, 1};
        break;
    case LayerKind::MaxPool2d:
    case LayerKind::AvgPool2d:
        s.input = model::Shape{{16, 14, 14}};
        l.kernel = l.stride = 2;
        break;
    case LayerKind::Residual:
        s.input = model::Shape{{8, 14, 14}};
        l = {kind, 8, 8, 3, 1, 0};
        break;
    case LayerKind::LayerNorm:
        s.input = model::Shape{{49, 64}};
        l.in = 64;
        break;
    case LayerKind::BatchNorm:
        s.input = model::Shape{{16, 14, 14}};
        l.in = 16;
        break;
    case LayerKind::Dropout:
        s.input = model::Shape{{16, 14, 14}};
        l.rate = 0.1;
        break;
    case LayerKind::PatchEmbed:
        s.input = model::Shape{{1, 28, 28}};
        l.in = 1;
        l.out = 64;
        l.kernel = 4;
        break;
    case LayerKind::Encoder:
        s.input = model::Shape{{49, 64}};
        l.in = l.out = 64;
        l.heads = 4;
        l.hidden = 128;
        break;
    case LayerKind::TokenMean:
        s.input = model::Shape{{49, 64}};
        break;
    }
    s.layers = {l};
    return s;
}

struct Measured
{
    double flops = 0;
    int64_t retainedBytes = 0; ///< allocated during the forward and still held after it
    int64_t parameters = 0;
};

Measured measureForward(const model::ModelSpec &spec)
{
    namespace prof = torch::autograd::profiler;
    namespace impl = torch::profiler::impl;
    train::LayerStack net(spec, 0, 1);
    net->train();
    std::vector<int64_t> dims{kBatch};
    dims.insert(dims.end(), spec.input.dims.begin(), spec.input.dims.end());
    // As in the middle of a model: the input needs its gradient.
    const auto input = torch::randn(dims).requires_grad_(true);
    (void)net->forward(input); // once unmeasured, for one-off allocations
    Measured m;
    for (const auto &p : net->parameters())
        m.parameters += p.numel();
    // Input shapes on: the profiler needs them to count FLOPs.
    const impl::ProfilerConfig config(impl::ProfilerState::KINETO, true, true, false, true);
    prof::prepareProfiler(config, {impl::ActivityType::CPU});
    prof::enableProfiler(config, {impl::ActivityType::CPU});
    auto output = net->forward(input);
    const auto result = prof::disableProfiler();
    for (const auto &e : result->events()) {
        m.flops += double(e.flops());
        m.retainedBytes += e.nBytes(); // allocations positive, frees negative
    }
    output.reset();
    return m;
}

double relativeError(double predicted, double measured)
{
    return std::abs(predicted - measured) / std::max(std::abs(measured), 1.0);
}

} // namespace

class TestLayerCosts : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { device::applyThreadConfig({1, 1}); }

    void againstTheProfiler_data()
    {
        QTest::addColumn<int>("kind");
        for (auto kind : model::kAllLayerKinds)
            QTest::newRow(std::string(model::layerKindName(kind)).c_str()) << int(kind);
    }

    // Acceptance (issue 18): the cost model within 30% of measured FLOPs and memory.
    // PyTorch's profiler counts FLOPs of matrix products, convolutions, sums and
    // products only: the layers built of those are held to 30%; for the element-wise,
    // norm and pooling kinds it counts none or part, and their figures stay estimates
    // (see docs/job-file.md). Memory is held to 30% for every kind.
    void againstTheProfiler()
    {
        QFETCH(int, kind);
        const auto spec = oneLayerOf(LayerKind(kind));
        const auto cost = model::layerCosts(spec, kBatch).front();
        const auto m = measureForward(spec);
        qInfo("%-10s params %lld (module %lld)  FLOPs %.3g (profiler %.3g)  saved %lld B (measured %lld B)",
              spec.name.c_str(), (long long)cost.parameters, (long long)m.parameters, cost.forwardFlops, m.flops,
              (long long)cost.savedBytes, (long long)m.retainedBytes);
        QCOMPARE(cost.parameters, m.parameters);
        switch (LayerKind(kind)) {
        case LayerKind::Linear:
        case LayerKind::Conv2d:
        case LayerKind::Residual:
        case LayerKind::PatchEmbed:
        case LayerKind::Encoder:
            QVERIFY2(
                relativeError(cost.forwardFlops, m.flops) <= 0.3,
                qPrintable(QStringLiteral("FLOPs: predicted %1, measured %2").arg(cost.forwardFlops).arg(m.flops)));
            break;
        default:
            // What the profiler does count here (Dropout's product) must not exceed the
            // estimate: the estimate may be rough, but never leaves counted work out.
            QVERIFY2(m.flops <= cost.forwardFlops,
                     qPrintable(QStringLiteral("the profiler counted %1 FLOPs, the estimate %2")
                                    .arg(m.flops)
                                    .arg(cost.forwardFlops)));
            break;
        }
        const double allowed = 0.3 * std::max<double>(double(m.retainedBytes), 1024.0);
        QVERIFY2(
            std::abs(double(cost.savedBytes - m.retainedBytes)) <= allowed,
            qPrintable(
                QStringLiteral("saved bytes: predicted %1, measured %2").arg(cost.savedBytes).arg(m.retainedBytes)));
    }
};

QTEST_GUILESS_MAIN(TestLayerCosts)
#include "tst_layer_costs.moc"
