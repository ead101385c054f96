// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/sim/sim_job.h"

#include <limits>

#include "engine/common/error.h"
#include "engine/train/optimizer_config.h"

namespace rookery::sim {

std::vector<std::string> applyJob(SimConfig &config, const coord::RunConfig &run)
{
    coord::validate(run);
    const int64_t interval = run.averagingInterval * run.accumulation;
    if (interval > std::numeric_limits<int>::max())
        throw Error("sim: the job averages every " + std::to_string(interval) +
                    " microbatches (its interval times its accumulation), more than the simulator counts");
    config.model = run.model.name;
    config.modelSpec = run.model;
    config.microbatch = run.microbatch;
    config.optimizerStateCopies = train::stateCopies(run.optimizer);
    config.averagingInterval = int(interval);
    config.maxWindow = int(run.maxWindow);
    config.seed = run.seed;
    std::vector<std::string> notes;
    if (run.overlapAveraging)
        notes.push_back("the job's averaging overlaps training (overlap_averaging), which the simulator does not "
                        "model: its rounds pause the pipeline, so averaging costs more time here than it would");
    return notes;
}

} // namespace rookery::sim
