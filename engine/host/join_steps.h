// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "engine/host/engine_snapshot.h"
#include "engine/participant/join_state.h"

namespace rookery::host {

/// What the coordinator's status API says of this node's reachability ("", "checking",
/// "direct", "unreachable") and why, as AssignmentView carries it.
struct ReachVerdict
{
    std::string reachability;
    std::string note;
};

/// The four join steps (connect, register, reach, assign) for people, from the node's
/// own join state and the coordinator's verdict. `where` is the coordinator's
/// "host:port". Each step that failed says what went wrong and what to do.
std::vector<JoinStepView> joinSteps(const participant::JoinState &state, const ReachVerdict &reach,
                                    const std::string &where);

/// A failed connection attempt in plain words: what the network stack said ("Connection
/// refused", "timed out", a certificate that is not the pinned one) turned into what it
/// means and what to do.
std::string plainConnectProblem(const std::string &reason, const std::string &where);

} // namespace rookery::host
