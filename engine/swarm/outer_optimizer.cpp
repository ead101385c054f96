// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/swarm/outer_optimizer.h"

#include <cmath>
#include <cstring>

#include "engine/common/splitmix64.h"

namespace rookery::swarm {
namespace {

// FNV-1a over the values' bits, mixed by one splitmix64 step; 0 is kept for "none".
uint64_t tagOf(std::span<const float> values)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const float v : values) {
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        h = (h ^ bits) * 0x100000001b3ull;
    }
    const uint64_t tag = SplitMix64{h}.next();
    return tag ? tag : 1;
}

} // namespace

std::string OuterSettings::problem() const
{
    if (!std::isfinite(learningRate) || learningRate <= 0 || learningRate > 2)
        return "the outer learning rate must be above 0 and at most 2 (1 with momentum 0 is plain averaging), not " +
               std::to_string(learningRate);
    if (!std::isfinite(momentum) || momentum < 0 || momentum >= 1)
        return "the outer momentum must be at least 0 and below 1, not " + std::to_string(momentum);
    return {};
}

OuterOptimizer::OuterOptimizer(OuterSettings settings)
    : m_settings(settings)
{ }

std::vector<float> OuterOptimizer::step(std::span<const float> averaged)
{
    std::vector<float> out(averaged.begin(), averaged.end());
    if (!m_anchor || m_anchor->size() != averaged.size()) {
        m_anchor = out;
        m_anchorTag = tagOf(out);
        m_velocity.assign(m_settings.plain() ? 0 : out.size(), 0.0f); // plain averaging has no momentum
        m_carry.assign(out.size(), 0.0f);
        return out;
    }
    if (m_settings.plain()) {
        *m_anchor = out;
        m_anchorTag = tagOf(out);
        return out;
    }
    const double lr = m_settings.learningRate, mu = m_settings.momentum;
    auto &anchor = *m_anchor;
    for (size_t i = 0; i < out.size(); ++i) {
        const double delta = double(anchor[i]) - double(averaged[i]);
        const double v = mu * double(m_velocity[i]) + delta;
        m_velocity[i] = float(v);
        out[i] = float(double(anchor[i]) - lr * (delta + mu * v));
        anchor[i] = out[i];
    }
    m_anchorTag = tagOf(out);
    return out;
}

void OuterOptimizer::reset()
{
    m_anchor.reset();
    m_anchorTag = 0;
    m_velocity.clear();
    m_carry.clear();
}

} // namespace rookery::swarm
