// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <array>
#include <vector>

#include "engine/host/engine_snapshot.h"
#include "ui/cards/card.h"

class QLabel;

namespace rookery::ui {

/// Joining a swarm, step by step: connected to the coordinator, registered, reachable
/// by the other volunteers (or relayed), assigned a place. Each step shows a mark for
/// its state and a sentence; a step that failed says what went wrong and what to do.
/// Hidden while no swarm is being joined.
///
/// Thread safety: UI thread.
class JoinCard : public Card
{
    Q_OBJECT

public:
    static constexpr int kSteps = 4;

    explicit JoinCard(QWidget *parent = nullptr);
    void showJoin(const std::vector<host::JoinStepView> &steps);

    /// Step `i` (0: connect, 1: register, 2: reach, 3: assign): its value label, whose
    /// "joinState" property holds the step's state word ("done", "failed", ...).
    QLabel *stepLabel(int i) const { return m_steps.at(size_t(i)); }

private:
    std::array<QLabel *, kSteps> m_steps{};
};

} // namespace rookery::ui
