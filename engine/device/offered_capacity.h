// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "engine/device/capability_profile.h"
#include "engine/device/governor_settings.h"

namespace rookery::device {

/// What a volunteer offers the swarm: its measured profile within its caps while its
/// user is active (the stricter situation; an idle machine may do more, and the plan
/// does not count on it). Available memory is limited to the memory cap; the GFLOP/s
/// to the cores it may use (`maxCores` times one thread's figure, when that is less
/// than all threads') and then scaled by its CPU share. GPUs are listed but offer no
/// GFLOP/s: stages train on the CPU (engine/train), and the coordinator plans with a
/// GPU's figure where one is given. The coordinator plans with these figures, and
/// checks them against the speed the node then trains at.
CapabilityProfile offeredProfile(CapabilityProfile measured, const GovernorSettings &caps);

} // namespace rookery::device
