// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/model/partitioner.h"

#include <cmath>
#include <cstdio>

#include "engine/common/error.h"
#include "engine/common/format.h"

namespace rookery::model {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int64_t kFloatBytes = 4;

std::string deviceName(const std::vector<StageDevice> &devices, size_t s)
{
    std::string text = "device " + std::to_string(s);
    if (!devices[s].name.empty())
        text += " ('" + devices[s].name + "')";
    return text;
}

void checkDevices(const std::vector<StageDevice> &devices)
{
    if (devices.empty())
        throw Error("no devices to place stages on");
    for (size_t s = 0; s < devices.size(); ++s) {
        const auto &d = devices[s];
        if (!(d.gflops > 0) || !std::isfinite(d.gflops))
            throw Error(deviceName(devices, s) + " has no usable speed (" + std::to_string(d.gflops) + " GFLOP/s)");
        if (d.memoryBytes == 0)
            throw Error(deviceName(devices, s) + " has no memory to give");
        if (!(d.linkBytesPerSecond > 0))
            throw Error(deviceName(devices, s) + " has no usable link bandwidth");
    }
}

// Prefix sums over the layers, so that any stage's cost is O(1).
class CostModel
{
public:
    CostModel(const std::vector<LayerCost> &costs, const std::vector<StageDevice> &devices,
              const PartitionOptions &options)
        : m_costs(costs)
        , m_devices(devices)
        , m_options(options)
        , m_window(options.inFlight > 0 ? options.inFlight : int(devices.size()) + 1)
    {
        m_flops.push_back(0);
        m_params.push_back(0);
        m_activations.push_back(0);
        m_parametersBefore.push_back(false);
        for (size_t i = 0; i < costs.size(); ++i) {
            m_flops.push_back(m_flops.back() + trainingFlops(costs, i));
            m_params.push_back(m_params.back() + double(costs[i].parameters) * kFloatBytes);
            m_activations.push_back(m_activations.back() + double(costs[i].savedBytes));
            m_parametersBefore.push_back(m_parametersBefore.back() || costs[i].parameters > 0);
        }
    }

    size_t layers() const { return m_costs.size(); }
    size_t stages() const { return m_devices.size(); }

    StagePlan plan(size_t s, size_t first, size_t last) const
    {
        const StageDevice &d = m_devices[s];
        const bool root = s == 0, leaf = s + 1 == stages();
        const double inBytes = first == 0 ? double(m_options.inputBytes) : double(m_costs[first - 1].activationBytes);
        const double outBytes = double(m_costs[last - 1].activationBytes);
        // Each stage pays for what it uploads: its output (and the labels riding along)
        // forward, and the gradient of its input backward, which is as large as the input
        // and only sent when some earlier layer has parameters.
        double upload = 0;
        if (!leaf)
            upload += outBytes + double(m_options.labelBytes);
        if (!root && m_parametersBefore[first])
            upload += inBytes;
        StagePlan p;
        p.firstLayer = first;
        p.lastLayer = last;
        p.computeSeconds = (m_flops[last] - m_flops[first]) / (d.gflops * 1e9);
        p.transferSeconds = std::isinf(d.linkBytesPerSecond) ? 0 : upload / d.linkBytesPerSecond;
        p.seconds = std::max(p.computeSeconds, p.transferSeconds); // overlapped (StagePlan::seconds)
        // Weights, gradients and optimizer state; the copy of the weights a stage
        // publishes for peers that take its layers over; a checkpoint's copy of weights
        // and optimizer state while it is written; one stashed weight version per
        // microbatch in flight except at the leaf, whose backward follows its forward at
        // once, and one more while a forward makes a new version and the oldest is still
        // held; saved activations (the input and what every layer keeps for its
        // backward) per microbatch in flight, one at the leaf. (Measured on the vision
        // transformer's three stages with the allocator keeping memory tight: the leaf
        // held within 3% of the steady part; docs/benchmarks.md, bench_jobs.)
        const double params = m_params[last] - m_params[first];
        const double held = leaf ? 1 : double(m_window);
        const double steady = params * (2 + m_options.optimizerStateCopies) + params;
        const double checkpoint = params * (1 + m_options.optimizerStateCopies);
        const double bytes = steady + checkpoint + (leaf ? 0 : params * (held + 1)) +
                             held * (inBytes + m_activations[last] - m_activations[first]);
        p.memoryBytes = uint64_t(std::ceil(bytes));
        p.fits = p.memoryBytes <= d.memoryBytes;
        return p;
    }

private:
    const std::vector<LayerCost> &m_costs;
    const std::vector<StageDevice> &m_devices;
    PartitionOptions m_options;
    int m_window;
    std::vector<double> m_flops, m_params, m_activations;
    std::vector<bool> m_parametersBefore;
};

Partition finish(std::vector<StagePlan> stages)
{
    Partition p;
    p.stages = std::move(stages);
    for (size_t s = 1; s < p.stages.size(); ++s)
        if (p.stages[s].seconds > p.stages[p.bottleneck].seconds)
            p.bottleneck = s;
    return p;
}

[[noreturn]] void explainInfeasible(const CostModel &model, const std::vector<LayerCost> &costs,
                                    const std::vector<StageDevice> &devices)
{
    const size_t n = model.layers(), stages = model.stages();
    // A device is to blame when even the smallest stage it could hold (one layer, at any
    // position its place in the order allows) does not fit it.
    for (size_t s = 0; s < stages; ++s) {
        StagePlan smallest;
        smallest.memoryBytes = UINT64_MAX;
        for (size_t i = s; i + stages <= n + s; ++i) {
            StagePlan p = model.plan(s, i, i + 1);
            if (p.memoryBytes < smallest.memoryBytes)
                smallest = p;
        }
        if (!smallest.fits)
            throw Error(deviceName(devices, s) + " has " + format::bytes(double(devices[s].memoryBytes)) +
                        " of memory, too little for any stage: the smallest it could hold (layer " +
                        std::to_string(smallest.firstLayer) + ", " +
                        std::to_string(costs[smallest.firstLayer].parameters) + " parameters) needs " +
                        format::bytes(double(smallest.memoryBytes)));
    }
    throw Error("no cut of the model's " + std::to_string(n) + " layers into " + std::to_string(stages) +
                " stages fits every device's memory; add memory or devices");
}

// One pass of the dynamic programme over (device s, stage end j). `combine` folds the
// best value of the first s stages with stage s's plan; `accept` filters stages.
template <typename Combine, typename Accept>
std::vector<StagePlan> solve(const CostModel &model, Combine combine, Accept accept)
{
    const size_t n = model.layers(), stages = model.stages();
    std::vector<std::vector<double>> best(stages, std::vector<double>(n + 1, kInfinity));
    std::vector<std::vector<size_t>> from(stages, std::vector<size_t>(n + 1, 0));
    for (size_t j = 1; j + stages <= n + 1; ++j) {
        StagePlan p = model.plan(0, 0, j);
        if (accept(p))
            best[0][j] = combine(0.0, p);
    }
    for (size_t s = 1; s < stages; ++s)
        for (size_t j = s + 1; j + stages <= n + s + 1; ++j)
            for (size_t i = s; i < j; ++i) {
                if (best[s - 1][i] == kInfinity)
                    continue;
                StagePlan p = model.plan(s, i, j);
                if (!accept(p))
                    continue;
                const double v = combine(best[s - 1][i], p);
                if (v < best[s][j]) {
                    best[s][j] = v;
                    from[s][j] = i;
                }
            }
    if (best[stages - 1][n] == kInfinity)
        return {};
    std::vector<StagePlan> plans(stages);
    size_t end = n;
    for (size_t s = stages; s-- > 0;) {
        const size_t start = from[s][end];
        plans[s] = model.plan(s, start, end);
        end = start;
    }
    return plans;
}

} // namespace

PartitionOptions partitionOptionsFor(const ModelSpec &spec, int64_t microbatch, double optimizerStateCopies)
{
    validate(spec);
    PartitionOptions o;
    o.inputBytes = spec.input.elements() * microbatch * kFloatBytes;
    o.labelBytes = microbatch * int64_t(sizeof(int64_t));
    o.optimizerStateCopies = optimizerStateCopies;
    return o;
}

std::vector<size_t> Partition::cuts() const
{
    std::vector<size_t> out;
    for (size_t s = 1; s < stages.size(); ++s)
        out.push_back(stages[s].firstLayer);
    return out;
}

bool Partition::fits() const
{
    for (const auto &s : stages)
        if (!s.fits)
            return false;
    return true;
}

std::string Partition::describe() const
{
    std::string text;
    char buffer[96];
    for (const auto &s : stages) {
        std::snprintf(buffer, sizeof buffer, "[%zu,%zu) %.3f ms%s", s.firstLayer, s.lastLayer, s.seconds * 1e3,
                      s.fits ? "" : " (does not fit)");
        text += (text.empty() ? "" : " | ") + std::string(buffer);
    }
    return text + "; bottleneck stage " + std::to_string(bottleneck);
}

double trainingFlops(const std::vector<LayerCost> &costs, size_t index)
{
    bool parametersBefore = false;
    for (size_t i = 0; i < index; ++i)
        parametersBefore = parametersBefore || costs[i].parameters > 0;
    const double forward = costs[index].forwardFlops;
    const double inputGradient = parametersBefore ? 1 : 0;
    const double weightGradient = costs[index].parameters > 0 ? 1 : 0;
    return forward * (1 + inputGradient + weightGradient);
}

namespace {

// partitionLayers(), with `explain` saying why when no cut fits (else no value).
std::optional<Partition> partition(const std::vector<LayerCost> &costs, const std::vector<StageDevice> &devices,
                                   const PartitionOptions &options, bool explain)
{
    checkDevices(devices);
    if (costs.size() < devices.size()) {
        if (!explain)
            return std::nullopt;
        throw Error("cannot cut a model of " + std::to_string(costs.size()) + " layers into " +
                    std::to_string(devices.size()) + " stages: every device needs at least one layer");
    }
    const CostModel model(costs, devices, options);
    const auto fits = [](const StagePlan &p) { return p.fits; };
    // First the smallest possible bottleneck; then, among the cuts that reach it, the
    // most even one (least sum of squared stage times), so that stages off the critical
    // path are not needlessly lopsided.
    auto plans = solve(
        model, [](double prefix, const StagePlan &p) { return std::max(prefix, p.seconds); }, fits);
    if (plans.empty()) {
        if (!explain)
            return std::nullopt;
        explainInfeasible(model, costs, devices);
    }
    const double bottleneck = finish(plans).bottleneckSeconds();
    const double limit = bottleneck * (1 + 1e-12);
    auto even = solve(
        model, [](double prefix, const StagePlan &p) { return prefix + p.seconds * p.seconds; },
        [&](const StagePlan &p) { return p.fits && p.seconds <= limit; });
    return finish(even.empty() ? std::move(plans) : std::move(even));
}

} // namespace

Partition partitionLayers(const std::vector<LayerCost> &costs, const std::vector<StageDevice> &devices,
                          const PartitionOptions &options)
{
    return *partition(costs, devices, options, true);
}

std::optional<Partition> tryPartitionLayers(const std::vector<LayerCost> &costs,
                                            const std::vector<StageDevice> &devices, const PartitionOptions &options)
{
    return partition(costs, devices, options, false);
}

Partition partitionModel(const ModelSpec &spec, int64_t microbatch, const std::vector<StageDevice> &devices,
                         double optimizerStateCopies)
{
    return partitionLayers(layerCosts(spec, microbatch), devices,
                           partitionOptionsFor(spec, microbatch, optimizerStateCopies));
}

Partition evaluateCut(const std::vector<LayerCost> &costs, const std::vector<StageDevice> &devices,
                      const PartitionOptions &options, const std::vector<size_t> &cuts)
{
    checkDevices(devices);
    if (cuts.size() + 1 != devices.size())
        throw Error(std::to_string(cuts.size()) + " cuts make " + std::to_string(cuts.size() + 1) + " stages, but " +
                    std::to_string(devices.size()) + " devices were given");
    const CostModel model(costs, devices, options);
    std::vector<StagePlan> plans;
    size_t first = 0;
    for (size_t s = 0; s < devices.size(); ++s) {
        const size_t last = s < cuts.size() ? cuts[s] : costs.size();
        if (last <= first || last > costs.size())
            throw Error("cut points must rise strictly inside the model's " + std::to_string(costs.size()) + " layers");
        plans.push_back(model.plan(s, first, last));
        first = last;
    }
    return finish(std::move(plans));
}

std::vector<size_t> equalParameterCuts(const std::vector<LayerCost> &costs, size_t stages)
{
    if (stages == 0 || costs.size() < stages)
        throw Error("cannot cut a model of " + std::to_string(costs.size()) + " layers into " + std::to_string(stages) +
                    " stages");
    int64_t total = 0;
    for (const auto &c : costs)
        total += c.parameters;
    // Ravnest's shares: round(1/S, 1) each (Python rounds half to even: 0.25 -> 0.2),
    // the last node the rest; thresholds are int(share * total).
    const double share = std::nearbyint(10.0 / double(stages)) / 10.0;
    std::vector<int64_t> thresholds(stages, int64_t(share * double(total)));
    thresholds.back() = int64_t((1.0 - share * double(stages - 1)) * double(total));
    // The greedy fill of PiPPy's split_on_size_thresholds, which Ravnest adapts: layers
    // without parameters stay with the stage that is open when they come.
    std::vector<size_t> cuts;
    int64_t accumulated = 0;
    size_t stage = 0;
    for (size_t i = 0; i < costs.size() && cuts.size() + 1 < stages; ++i) {
        const int64_t size = costs[i].parameters;
        if (size == 0)
            continue;
        const int64_t threshold = thresholds[std::min(stage, stages - 1)];
        if (accumulated + size <= threshold) {
            accumulated += size;
        } else if (accumulated == 0) { // a layer above the threshold is a stage of its own
            if (i + 1 < costs.size())
                cuts.push_back(i + 1);
            ++stage;
        } else {
            cuts.push_back(i);
            accumulated = size;
            ++stage;
        }
    }
    // Give nodes left without a layer one each, taken off the end of the last stage that
    // can spare one.
    while (cuts.size() + 1 < stages) {
        std::vector<size_t> bounds{0};
        bounds.insert(bounds.end(), cuts.begin(), cuts.end());
        bounds.push_back(costs.size());
        for (size_t s = bounds.size() - 1; s-- > 0;)
            if (bounds[s + 1] - bounds[s] >= 2) {
                cuts.insert(cuts.begin() + long(s), bounds[s + 1] - 1);
                break;
            }
    }
    return cuts;
}

} // namespace rookery::model
