// SPDX-License-Identifier: GPL-3.0-or-later
// The coordinator's stored run: resumed when the operator asks for the same run again,
// else a fresh one with its own id.
#include "engine/coord/coordinator_impl.h"

#include <ctime>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/wall_clock.h"
#include "engine/coord/coord_json.h"
#include "engine/coord/registration_check.h"

namespace rookery::coord {

using namespace coordinator_detail;

namespace {

std::string newRunId()
{
    const std::time_t t = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&t, &utc);
    char buf[32];
    std::strftime(buf, sizeof buf, "run-%Y%m%d-%H%M%S", &utc);
    return buf;
}

bool sameRun(RunConfig a, RunConfig b)
{
    a.runId = b.runId = "";
    return a == b;
}

} // namespace

// Resumes the stored run when the operator asks for the same one; else starts afresh.
void Coordinator::Impl::restore(const StoredState &stored)
{
    for (const auto &[nonce, at] : stored.nonces)
        replay.admit(nonce, at);
    std::optional<RunConfig> previous;
    if (stored.run) {
        try {
            previous = runConfigFromJson(stored.run->configJson);
        } catch (const Error &e) {
            log::warning(kArea, std::string("ignoring the stored run: ") + e.what());
        }
    }
    if (previous && sameRun(*previous, run)) {
        run.runId = stored.run->id;
        std::map<std::string, swarm::Capacity> capacities;
        for (const auto &v : stored.volunteers) {
            try {
                capacities.emplace(v.nodeId, capacityOf(v.profileJson, v.uploadBytesPerSecond > 0
                                                                           ? v.uploadBytesPerSecond
                                                                           : kDefaultUploadBytesPerSecond));
            } catch (const Error &) { }
        }
        if (!stored.run->planJson.empty()) {
            try {
                plan = PlanState::fromJson(
                    planModelOf(run, settings),
                    {run.seed, settings.planPopulation, settings.planGenerations, settings.clusterSize},
                    stored.run->planJson, capacities);
            } catch (const Error &e) {
                log::warning(kArea, std::string("cannot restore the stored plan; planning afresh: ") + e.what());
            }
        }
        for (const auto &[id, a] : stored.assignments)
            if (plan.contains(id))
                published.emplace(id, a);
        log::info(kArea, "resuming " + run.runId + ": " + std::to_string(stored.volunteers.size()) +
                             " known volunteers, " + std::to_string(plan.size()) + " in the plan");
        return;
    }
    run.runId = newRunId();
    if (previous)
        log::warning(kArea, "the run configuration differs from the stored run " + stored.run->id + "; starting " +
                                run.runId + " with a fresh plan");
    store.saveRun({run.runId, nowMs(), toJson(run), ""});
}
} // namespace rookery::coord
