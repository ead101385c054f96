// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "engine/device/governor.h"
#include "engine/host/engine_snapshot.h"

namespace rookery::device {
struct CapabilityProfile;
} // namespace rookery::device
namespace rookery::model {
struct ModelSpec;
}
namespace rookery::store {
struct CheckpointInfo;
}

namespace rookery::host {

/// The engine's own values turned into the snapshot's display values.
///
/// Thread safety: pure functions.
DeviceView deviceView(const device::CapabilityProfile &profile, bool measured);
CheckpointView checkpointView(const store::CheckpointInfo &info);
/// "Linear(784->512)", ... for layers [first, last) of `spec` (all when last is 0).
std::vector<std::string> layerNames(const model::ModelSpec &spec, size_t first = 0, size_t last = 0);
/// "root", "middle", "leaf", or "whole model" for a pipeline of one.
std::string stageRole(int stage, int stages);

inline GovernorView governorView(const device::GovernorStatus &s)
{
    GovernorView g;
    g.state = std::string(device::stateName(s.state));
    g.reason = s.reason;
    g.pausedByUser = s.pausedByUser;
    g.snoozedUntilMs = s.snoozedUntilMs;
    g.cpuPercent = s.limits.cpuPercent;
    g.cores = s.limits.cores;
    return g;
}

} // namespace rookery::host
