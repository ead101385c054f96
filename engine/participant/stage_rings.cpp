// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/stage_rings.h"

#include <exception>
#include <thread>

namespace rookery::participant {

void StageRing::follow(const coord::RingRef &r)
{
    ref = r;
    previousFinished = false;
    next = r.alone() ? std::string() : r.next.nodeId;
    previous = r.alone() ? std::string() : r.previous.nodeId;
    if (links)
        links->setNeighbours(next, previous);
}

void averageAtOnce(std::vector<RingJob> &jobs, int64_t round, ValuePrecision precision)
{
    const auto average = [round, precision](RingJob &job) {
        try {
            auto &outer = job.ring->outer;
            const swarm::RingEncoding encoding{outer.anchor(), outer.anchorTag(), precision, outer.carry()};
            job.outcome =
                job.ring->averaging->average(job.parameters, job.ring->place(), round, *job.ring->links, encoding);
        } catch (const std::exception &e) {
            job.outcome.result.error = std::string("the round failed: ") + e.what();
        }
    };
    std::vector<std::thread> threads;
    for (size_t i = 0; i + 1 < jobs.size(); ++i)
        threads.emplace_back([&average, &job = jobs[i]] { average(job); });
    if (!jobs.empty())
        average(jobs.back());
    for (auto &t : threads)
        t.join();
}

} // namespace rookery::participant
