// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "engine/coord/assignment.h"
#include "engine/sim/simulator.h"

namespace rookery::sim {

/// Sets what the simulator times from an operator's job (coord::readJobFile; docs/
/// job-file.md), so that rookery-sim plans the model the coordinator would: the model
/// layer by layer, the microbatch, the optimizer's state (the plan's memory), the
/// averaging interval (in microbatches: optimizer steps times the accumulation), the
/// roots' window cap and the seed. Learning rates and the outer step change accuracy,
/// which the simulator does not model, so they are left out. Returns a note for each
/// setting of the job that the simulator cannot honour, for the caller to show.
/// Throws rookery::Error when the interval in microbatches is too large.
std::vector<std::string> applyJob(SimConfig &config, const coord::RunConfig &run);

} // namespace rookery::sim
