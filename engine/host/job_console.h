// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <functional>
#include <string>

#include "engine/host/whole_model_run.h"
#include "engine/participant/swarm_node.h"

namespace rookery::host {

/// What a terminal shows of a job (rookery-node prints it): called on the job's threads,
/// besides the snapshot and the events every host gets. The desktop app leaves it empty.
struct JobConsole
{
    WholeModelRun::Callbacks wholeModel; ///< a run of the whole model here
    std::function<void(const WholeModelSummary &)> wholeModelDone;
    participant::SwarmNode::Callbacks swarm; ///< this machine as a swarm node
    std::function<void(const participant::SwarmNodeSummary &)> swarmDone;
    /// The job ended (on the engine's thread): how, and whether that was a failure.
    std::function<void(const std::string &outcome, bool failed)> ended;
};

} // namespace rookery::host
