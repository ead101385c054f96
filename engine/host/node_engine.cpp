// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/node_engine.h"

#include <optional>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/host/node_engine_impl.h"
#include "engine/net/coordinator_address.h"

namespace rookery::host {

using Level = EngineEvent::Level;

// ---- commands: each runs on the engine thread ----

NodeEngine::NodeEngine(NodeEngineSettings settings)
    : d(std::make_unique<Impl>(std::move(settings)))
{
    d->thread = std::thread([this] { d->run(); });
}

NodeEngine::~NodeEngine()
{
    {
        std::lock_guard lock(d->mutex);
        d->quit = true;
    }
    d->wake.notify_all();
    d->thread.join();
}

void NodeEngine::setConsent(bool given)
{
    d->post([this, given] {
        d->state.consentGiven = given;
        if (given) {
            d->ensureProfile();
        } else if (d->job) {
            if (auto next = std::exchange(d->pending, std::nullopt))
                next->done("consent was withdrawn");
            d->say(Level::Info, "train", "consent withdrawn: saving a checkpoint and stopping");
            d->job->requestStop();
        }
        d->publish(true);
    });
}

void NodeEngine::startLocal(ResultCallback done)
{
    d->post([this, done = std::move(done)] {
        if (!d->state.consentGiven)
            return done(kNoConsent);
        d->whenIdle([this, done] { d->beginLocal(d->settings.local.run, done); }, done);
    });
}

void NodeEngine::joinSwarm(const std::string &address, ResultCallback done)
{
    d->post([this, address, done = std::move(done)] {
        if (!d->state.consentGiven)
            return done(kNoConsent);
        try {
            net::CoordinatorAddress::parse(address);
        } catch (const Error &e) {
            return done(e.what());
        }
        d->whenIdle([this, address, done] { d->beginSwarm(address, 0, done); }, done);
    });
}

void NodeEngine::startDemoSwarm(int nodes, ResultCallback done)
{
    d->post([this, nodes, done = std::move(done)] {
        if (!d->state.consentGiven)
            return done(kNoConsent);
        if (nodes < 2 || nodes > 64)
            return done("a demo swarm has 2 to 64 nodes, not " + std::to_string(nodes));
        d->whenIdle([this, nodes, done] { d->beginSwarm({}, nodes, done); }, done);
    });
}

void NodeEngine::stopTraining(ResultCallback done)
{
    d->post([this, done = std::move(done)] {
        if (auto next = std::exchange(d->pending, std::nullopt))
            next->done("stopped before it began");
        if (!d->job)
            return done("");
        d->stopWaiters.push_back(done);
        d->say(Level::Info, "train", "stopping: saving a checkpoint first");
        d->job->requestStop();
    });
}

void NodeEngine::pause()
{
    d->post([this] {
        d->governor.pause();
        if (d->job)
            d->job->pause();
        d->tick();
    });
}

void NodeEngine::resume()
{
    d->post([this] {
        d->governor.resume();
        if (d->job)
            d->job->resume();
        d->tick();
    });
}

void NodeEngine::snooze(int minutes)
{
    d->post([this, minutes] {
        d->governor.snooze(std::chrono::minutes(minutes));
        if (d->job)
            d->job->snooze(minutes);
        d->tick();
    });
}

std::map<std::string, std::string> NodeEngine::governorSettings() const
{
    return device::toKeyValues(d->governor.settings());
}

void NodeEngine::applyGovernorSettings(const std::map<std::string, std::string> &values, ResultCallback done)
{
    d->post([this, values, done = std::move(done)] {
        try {
            const auto settings = device::fromKeyValues(values, d->governor.settings());
            d->governor.setSettings(settings);
            if (d->job)
                d->job->setGovernorSettings(settings);
        } catch (const Error &e) {
            return done(e.what());
        }
        d->say(Level::Info, "governor", "limits applied");
        d->tick();
        done("");
    });
}

void NodeEngine::resumeCheckpoint(int64_t id, ResultCallback done)
{
    d->post([this, id, done = std::move(done)] {
        if (!d->state.consentGiven)
            return done(kNoConsent);
        std::optional<store::CheckpointInfo> info;
        try {
            for (const auto &c : d->store().list())
                if (c.id == id)
                    info = c;
        } catch (const std::exception &e) {
            return done(e.what());
        }
        if (!info)
            return done("there is no checkpoint " + std::to_string(id));
        if (info->run.rfind("swarm:", 0) == 0)
            return done("a swarm checkpoint is resumed by its swarm: join that swarm again and this computer "
                        "continues from it when given the same layers");
        d->whenIdle([this, info = *info, done] { d->beginFromCheckpoint(info, done); }, done);
    });
}

void NodeEngine::deleteCheckpoint(int64_t id, ResultCallback done)
{
    d->post([this, id, done = std::move(done)] {
        bool removed = false;
        try {
            removed = d->store().remove(id);
        } catch (const std::exception &e) {
            return done(e.what());
        }
        d->refreshCheckpoints();
        d->publish(true);
        done(removed ? "" : "there is no checkpoint " + std::to_string(id));
    });
}

EngineSnapshot NodeEngine::snapshot() const
{
    std::lock_guard lock(d->mutex);
    return d->published;
}

std::vector<EngineEvent> NodeEngine::takeEvents()
{
    std::lock_guard lock(d->mutex);
    std::vector<EngineEvent> out(std::make_move_iterator(d->events.begin()), std::make_move_iterator(d->events.end()));
    d->events.clear();
    return out;
}

void NodeEngine::setNotifier(std::function<void()> notify)
{
    std::lock_guard lock(d->mutex);
    d->notifier = std::move(notify);
}

NodeEngineSettings defaultNodeEngineSettings()
{
    NodeEngineSettings s;
    s.dataDir = defaultDataDir();
    s.datasetDir = defaultFashionMnistDir();
    s.local.steps = 20000;
    s.local.checkpointEvery = 500;
    s.local.evalEvery = 1000;
    return s;
}

} // namespace rookery::host
