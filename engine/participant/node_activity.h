// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "engine/coord/assignment.h"
#include "engine/device/governor.h"
#include "engine/participant/assigned_stage.h"

namespace rookery::participant {

/// What a node tells the coordinator it is doing, in its heartbeats: paused while its
/// governor holds the work (the volunteer paused or snoozed it, it is on battery,
/// outside its schedule, or its user is at the keyboard), else what its stage does.
coord::NodeActivity nodeActivity(AssignedStage::Phase phase, device::GovernorState governor);

/// Why, when paused: the governor's rule that holds the work.
coord::AwayReason awayReason(device::HoldReason hold);

} // namespace rookery::participant
