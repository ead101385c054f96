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

} // namespace rookery::participant
