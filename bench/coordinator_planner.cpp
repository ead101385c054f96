// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/coordinator_planner.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "bench/coordinator_population.h"
#include "engine/common/error.h"
#include "engine/coord/plan_state.h"
#include "engine/model/model_zoo.h"
#include "engine/swarm/swarm_planner.h"

namespace rookery::bench {
namespace {

swarm::PlanModel mlp() { return {model::mlpSpec(), 64, 1}; }

swarm::Capacity capacityOf(const Volunteer &x) { return {x.gflops, int64_t(x.memory), x.upload}; }

int trainingIn(const coord::PlanState &s)
{
    int n = 0;
    for (const auto &p : s.placements())
        n += p.training ? 1 : 0;
    return n;
}

} // namespace

double plannerMs(int volunteers, uint64_t seed, int *clusters)
{
    const auto model = mlp();
    const int64_t demand = swarm::demandOf(model).memoryBytes;
    Rng rng{seed};
    std::vector<swarm::PlanVolunteer> v;
    for (int i = 0; i < volunteers; ++i)
        v.push_back({"v" + std::to_string(i), capacityOf(volunteer(rng, demand))});
    const auto start = std::chrono::steady_clock::now();
    const auto plan = swarm::planSwarm(model, v, {seed, 40, 120});
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    *clusters = plan.clustering.clusterCount();
    return t;
}

PlanComparison incrementalVsGlobal(int volunteers, uint64_t seed)
{
    const auto model = mlp();
    const int64_t demand = swarm::demandOf(model).memoryBytes;
    coord::PlanState s(model, {seed, 40, 120});
    Rng rng{seed};
    int id = 0;
    auto next = [&] { return std::pair{"v" + std::to_string(id++), capacityOf(volunteer(rng, demand))}; };
    // The first plan, as soon as the first arrivals can hold the model; then arrivals in
    // rounds that grow as a storm's do.
    for (bool planned = false; !planned && id < volunteers;) {
        s.apply({}, {next()});
        try {
            s.planAll();
            planned = true;
        } catch (const Error &) { } // nobody can hold the model yet: wait for more
    }
    for (int round = 20; id < volunteers; round *= 3) {
        std::vector<std::pair<std::string, swarm::Capacity>> joins;
        while (int(joins.size()) < round && id < volunteers)
            joins.push_back(next());
        s.apply({}, joins);
    }
    PlanComparison c;
    c.incrementalTraining = trainingIn(s);
    c.incrementalPredicted = s.plan().predictedSamplesPerSecond;
    s.planAll();
    c.globalTraining = trainingIn(s);
    c.globalPredicted = s.plan().predictedSamplesPerSecond;
    return c;
}

} // namespace rookery::bench
