// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/node/node_status_feed.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/common/error.h"

namespace rookery::node {

struct NodeStatusFeed::Impl
{
    NodeStatusFeedSettings settings;
    Callbacks callbacks;
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping = false;
    std::string lastProblem;
    std::thread thread;

    void run()
    {
        for (;;) {
            std::string problem;
            readSwarm(problem);
            if (problem != lastProblem && callbacks.problem)
                callbacks.problem(problem);
            lastProblem = problem;
            std::unique_lock lock(mutex);
            if (wake.wait_for(lock, settings.interval, [this] { return stopping; }))
                return;
        }
    }

    void readSwarm(std::string &problem)
    {
        if (settings.statusHost.empty() || !callbacks.swarm)
            return;
        try {
            const std::string json = fetchSwarmStatus(settings.statusHost, settings.statusPort, settings.pin,
                                                      std::chrono::milliseconds(1500));
            callbacks.swarm(parseSwarmStatus(json, settings.selfId));
        } catch (const Error &e) {
            if (problem.empty())
                problem = std::string(e.what()) + "; the peer graph shows this node only";
        }
    }
};

NodeStatusFeed::NodeStatusFeed(NodeStatusFeedSettings settings, Callbacks callbacks)
    : d(std::make_unique<Impl>())
{
    d->settings = std::move(settings);
    d->callbacks = std::move(callbacks);
    d->thread = std::thread([impl = d.get()] { impl->run(); });
}

NodeStatusFeed::~NodeStatusFeed()
{
    {
        std::lock_guard lock(d->mutex);
        d->stopping = true;
    }
    d->wake.notify_all();
    d->thread.join();
}

} // namespace rookery::node
