// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "engine/device/capability_profile.h"
#include "engine/device/governor_settings.h"

namespace rookery::device {

/// What a volunteer offers the swarm: its measured profile within the caps it set.
/// The CPU figures are limited to `maxCores` threads (one thread's GFLOP/s times the
/// cores) and scaled by the CPU share; available memory is limited to the memory cap.
/// The limits are those it trains under most of the time: while the user is active,
/// or while idle when it runs only then. GPUs are listed but offer no GFLOP/s: stages
/// train on the CPU (engine/train), and the coordinator plans with a GPU's figure
/// where one is given. The coordinator plans with these figures, and checks them
/// against the speed the node then trains at.
CapabilityProfile offeredProfile(CapabilityProfile measured, const GovernorSettings &caps);

} // namespace rookery::device
