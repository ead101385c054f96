// SPDX-License-Identifier: GPL-3.0-or-later
// The governor's status as the snapshot shows it. Header-only, so that the control API,
// which does not link the training engine, shares it.
#pragma once

#include <string>

#include "engine/device/governor.h"
#include "engine/node/engine_snapshot.h"

namespace rookery::node {

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

} // namespace rookery::node
