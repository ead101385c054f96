// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rookery::swarm {

/// The outer step applied after each averaging round (DiLoCo): the averaged change
/// since the last round is taken as a gradient and applied with Nesterov momentum.
/// learningRate 1 and momentum 0 are plain weight averaging, what the swarm did before.
struct OuterSettings
{
    double learningRate = 1;
    double momentum = 0;

    bool plain() const { return learningRate == 1 && momentum == 0; }
    /// "" when usable, else why not (a learning rate in (0, 2], a momentum in [0, 1)).
    std::string problem() const;
    bool operator==(const OuterSettings &) const = default;
};

/// One ring's outer optimizer. It keeps the anchor (the weights every member held after
/// the last round) and the momentum buffer. Each round:
///
///     delta    = anchor - averaged          (the ring's mean pseudo-gradient)
///     velocity = momentum * velocity + delta
///     weights  = anchor - learningRate * (delta + momentum * velocity)
///
/// and the new weights become the anchor. The first round, and any round after the
/// ring's layers changed size, has no anchor: it returns the average and starts there.
/// Members that start from the same anchor (every member after a complete round) take
/// the same step, so they stay equal. Plain averaging keeps the anchor too (the
/// average): the ring's next round sums the differences from it (RingEncoding).
///
/// Thread safety: one thread at a time.
class OuterOptimizer
{
public:
    explicit OuterOptimizer(OuterSettings settings);

    /// The weights after this round, given the ring's average of the members' weights.
    std::vector<float> step(std::span<const float> averaged);

    /// Forgets the anchor and the momentum (a round that did not complete leaves the
    /// members apart; the next one starts plain again).
    void reset();

    const OuterSettings &settings() const { return m_settings; }
    bool hasAnchor() const { return m_anchor.has_value(); }
    /// The weights after the last round (empty without an anchor), and a tag that names
    /// them: equal anchors have equal tags; never 0.
    std::span<const float> anchor() const
    {
        return m_anchor ? std::span<const float>(*m_anchor) : std::span<const float>();
    }
    uint64_t anchorTag() const { return m_anchorTag; }
    /// What this member's rounding left out of the last round (RingEncoding::carry),
    /// laid out as the anchor; zeros after the first round, empty without an anchor.
    std::span<float> carry() { return m_carry; }

private:
    OuterSettings m_settings;
    std::optional<std::vector<float>> m_anchor;
    std::vector<float> m_velocity;
    std::vector<float> m_carry;
    uint64_t m_anchorTag = 0;
};

} // namespace rookery::swarm
