// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/node_activity.h"

namespace rookery::participant {

coord::NodeActivity nodeActivity(AssignedStage::Phase phase, device::GovernorState governor)
{
    if (governor == device::GovernorState::Paused)
        return coord::NodeActivity::Paused;
    switch (phase) {
    case AssignedStage::Phase::Training:
    case AssignedStage::Phase::Finishing:
        return coord::NodeActivity::Training;
    case AssignedStage::Phase::Failed:
        return coord::NodeActivity::Failed;
    default:
        return coord::NodeActivity::Waiting;
    }
}

coord::AwayReason awayReason(device::HoldReason hold)
{
    switch (hold) {
    case device::HoldReason::None:
        return coord::AwayReason::None;
    case device::HoldReason::PausedByUser:
        return coord::AwayReason::PausedByUser;
    case device::HoldReason::Snoozed:
        return coord::AwayReason::Snoozed;
    case device::HoldReason::OnBattery:
        return coord::AwayReason::OnBattery;
    case device::HoldReason::OutsideSchedule:
        return coord::AwayReason::OutsideSchedule;
    case device::HoldReason::WaitingForIdle:
        return coord::AwayReason::WaitingForIdle;
    }
    return coord::AwayReason::None;
}

} // namespace rookery::participant
