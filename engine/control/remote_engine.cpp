// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/control/remote_engine.h"

#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/common/wall_clock.h"
#include "engine/control/control_client.h"
#include "engine/control/control_files.h"
#include "engine/control/snapshot_json.h"

namespace rookery::control {
namespace {

using Level = host::EngineEvent::Level;

constexpr size_t kMaxEvents = 1024;

// The "error" member of a JSON error body, else the body itself.
std::string errorText(const HttpReply &reply)
{
    try {
        const auto values = keyValuesFromJson(reply.body);
        if (const auto it = values.find("error"); it != values.end())
            return it->second;
    } catch (const Error &) { }
    return "HTTP " + std::to_string(reply.status) + (reply.body.empty() ? "" : ": " + reply.body);
}

} // namespace

std::string RemoteTarget::describe() const { return port ? "127.0.0.1:" + std::to_string(port) : dataDir.string(); }

RemoteTarget RemoteTarget::parse(const std::string &text, const std::string &tokenFile)
{
    RemoteTarget t;
    unsigned port = 0;
    const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), port);
    const bool number = !text.empty() && err == std::errc() && end == text.data() + text.size();
    if (number) {
        if (port == 0 || port > 65535)
            throw Error("port " + text + " is out of range (1-65535)");
        t.port = uint16_t(port);
        t.tokenFile = tokenFile.empty() ? defaultDataDir() / kTokenFileName : std::filesystem::path(tokenFile);
    } else {
        if (text.empty())
            throw Error("a port or the node's data directory is needed");
        t.dataDir = text;
        if (!tokenFile.empty())
            t.tokenFile = tokenFile;
    }
    return t;
}

struct RemoteEngine::Impl
{
    RemoteTarget target;
    std::chrono::milliseconds pollInterval;

    mutable std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> commands;
    bool stopping = false;
    host::EngineSnapshot snapshot;
    std::deque<host::EngineEvent> events;
    std::map<std::string, std::string> settings;
    std::function<void()> notifier;
    bool connected = false;
    std::optional<bool> consent;

    // The worker's alone.
    std::unique_ptr<ControlClient> client;
    std::string lastBody;
    int64_t eventsAfter = 0;
    bool haveSettings = false;
    std::thread worker;

    void post(std::function<void()> command)
    {
        {
            std::lock_guard lock(mutex);
            commands.push_back(std::move(command));
        }
        wake.notify_all();
    }

    /// A command without a result: a failure shows in the event log.
    void tell(std::string path, std::string verb)
    {
        post([this, path = std::move(path), verb = std::move(verb)] {
            if (const std::string error = command("POST", path); !error.empty())
                say(Level::Error, "could not " + verb + " the headless node: " + error);
        });
    }

    /// A command with a result: sent in order on the worker, the node's answer to `done`.
    void send(std::string method, std::string path, std::string body, ResultCallback done)
    {
        post([this, method = std::move(method), path = std::move(path), body = std::move(body),
              done = std::move(done)]() mutable {
            const std::string error = command(method, path, std::move(body));
            if (done)
                done(error);
        });
    }

    void notify()
    {
        std::function<void()> n;
        {
            std::lock_guard lock(mutex);
            n = notifier;
        }
        if (n)
            n();
    }

    void say(Level level, const std::string &message)
    {
        {
            std::lock_guard lock(mutex);
            events.push_back({nowMs(), level, "control", message});
            if (events.size() > kMaxEvents)
                events.pop_front();
        }
        notify();
    }

    // Reads the port and token afresh: a node that restarted has new ones.
    ControlClient &ensureClient()
    {
        if (client)
            return *client;
        ControlEndpoint e;
        if (target.port) {
            e.port = target.port;
            e.token = readToken(target.tokenFile);
        } else {
            e = readControlEndpoint(target.dataDir);
            if (!target.tokenFile.empty())
                e.token = readToken(target.tokenFile);
        }
        client = std::make_unique<ControlClient>("127.0.0.1", e.port, e.token);
        return *client;
    }

    HttpReply call(std::string_view method, std::string_view path, std::string body = {})
    {
        ControlClient &c = ensureClient();
        HttpReply reply;
        try {
            reply = c.request(method, path, std::move(body));
        } catch (const Error &) {
            client.reset();
            throw;
        }
        if (reply.status == 401) {
            const uint16_t port = c.port();
            client.reset();
            throw Error("the node on port " + std::to_string(port) + " refused the token" +
                        (target.tokenFile.empty() ? "" : " in " + target.tokenFile.string()) +
                        "; is that file the node's control-token?");
        }
        return reply;
    }

    // A command's result for its callback: "" or a sentence.
    std::string command(std::string_view method, std::string_view path, std::string body = {})
    {
        try {
            const HttpReply reply = call(method, path, std::move(body));
            return reply.status / 100 == 2 ? std::string() : errorText(reply);
        } catch (const Error &e) {
            return e.what();
        }
    }

    void poll();
    void lost(const std::string &why);
    void run();
};

void RemoteEngine::Impl::poll()
{
    try {
        const HttpReply status = call("GET", "/v1/status");
        if (status.status != 200)
            throw Error("the node answered GET /v1/status with " + errorText(status));
        host::EngineSnapshot next = snapshotFromJson(status.body);
        const HttpReply page = call("GET", "/v1/events?after=" + std::to_string(eventsAfter));
        const EventPage p = page.status == 200 ? eventPageFromJson(page.body) : EventPage{eventsAfter, {}};
        // A node that restarted counts its events from 0 again.
        eventsAfter = p.next < eventsAfter ? 0 : p.next;
        std::optional<std::map<std::string, std::string>> fetched;
        if (!haveSettings) {
            const HttpReply s = call("GET", "/v1/governor/settings");
            if (s.status == 200) {
                fetched = keyValuesFromJson(s.body);
                haveSettings = true;
            }
        }
        bool changed = false;
        {
            std::lock_guard lock(mutex);
            if (status.body != lastBody || !connected) {
                next.sequence = snapshot.sequence + 1;
                snapshot = std::move(next);
                lastBody = status.body;
                changed = true;
            }
            if (!connected)
                events.push_back(
                    {nowMs(), Level::Info, "control", "attached to the headless node at " + target.describe()});
            connected = true;
            for (const auto &e : p.events)
                events.push_back(e);
            while (events.size() > kMaxEvents)
                events.pop_front();
            if (fetched)
                settings = std::move(*fetched);
        }
        if (changed || !p.events.empty())
            notify();
    } catch (const Error &e) {
        lost(e.what());
    }
}

void RemoteEngine::Impl::lost(const std::string &why)
{
    {
        std::lock_guard lock(mutex);
        if (snapshot.lastError == why && !connected)
            return;
        const bool wasConnected = connected;
        connected = false;
        lastBody.clear();
        haveSettings = false;
        snapshot.lastError = why;
        snapshot.running = false;
        ++snapshot.sequence;
        events.push_back({nowMs(), Level::Warning, "control",
                          (wasConnected ? "lost the headless node: " : "cannot attach to the headless node: ") + why});
    }
    notify();
}

void RemoteEngine::Impl::run()
{
    auto nextPoll = std::chrono::steady_clock::now();
    for (;;) {
        std::deque<std::function<void()>> todo;
        bool quit;
        {
            std::unique_lock lock(mutex);
            wake.wait_until(lock, nextPoll, [this] { return stopping || !commands.empty(); });
            todo.swap(commands);
            quit = stopping;
        }
        for (auto &c : todo)
            c(); // callers wait on their results, so even a quitting app gets them
        if (quit)
            return;
        if (!todo.empty() || std::chrono::steady_clock::now() >= nextPoll) {
            poll();
            nextPoll = std::chrono::steady_clock::now() + pollInterval;
        }
    }
}

RemoteEngine::RemoteEngine(RemoteTarget target, std::chrono::milliseconds pollInterval)
    : d(std::make_shared<Impl>())
{
    d->target = std::move(target);
    d->pollInterval = pollInterval;
    d->snapshot.consentGiven = true;
    d->snapshot.assignment.mode = "idle";
    d->snapshot.lastError = "connecting to the headless node at " + d->target.describe();
    d->worker = std::thread([impl = d.get()] { impl->run(); });
}

RemoteEngine::~RemoteEngine()
{
    {
        std::lock_guard lock(d->mutex);
        d->stopping = true;
        d->notifier = nullptr;
    }
    d->wake.notify_all();
    d->worker.join();
}

void RemoteEngine::setConsent(bool given)
{
    bool withdrawn;
    {
        std::lock_guard lock(d->mutex);
        withdrawn = d->consent.value_or(false) && !given;
        d->consent = given;
    }
    // The node's operator consented when starting it; withdrawing consent here holds it.
    if (withdrawn)
        pause();
}

void RemoteEngine::startLocal(ResultCallback done) { d->send("POST", "/v1/local", {}, std::move(done)); }

void RemoteEngine::joinSwarm(const std::string &address, ResultCallback done)
{
    d->send("POST", "/v1/join", toJson(std::map<std::string, std::string>{{"address", address}}), std::move(done));
}

void RemoteEngine::startDemoSwarm(int nodes, ResultCallback done)
{
    d->send("POST", "/v1/demo-swarm?nodes=" + std::to_string(nodes), {}, std::move(done));
}

void RemoteEngine::stopTraining(ResultCallback done) { d->send("POST", "/v1/stop", {}, std::move(done)); }

void RemoteEngine::pause() { d->tell("/v1/pause", "pause"); }

void RemoteEngine::resume() { d->tell("/v1/resume", "resume"); }

void RemoteEngine::snooze(int minutes) { d->tell("/v1/snooze?minutes=" + std::to_string(minutes), "snooze"); }

std::map<std::string, std::string> RemoteEngine::governorSettings() const
{
    std::lock_guard lock(d->mutex);
    return d->settings;
}

void RemoteEngine::applyGovernorSettings(const std::map<std::string, std::string> &settings, ResultCallback done)
{
    d->post([impl = d.get(), body = toJson(settings), done = std::move(done)] {
        const std::string error = impl->command("PUT", "/v1/governor/settings", body);
        impl->haveSettings = false; // fetched again with the next status
        if (done)
            done(error);
    });
}

void RemoteEngine::resumeCheckpoint(int64_t id, ResultCallback done)
{
    d->send("POST", "/v1/checkpoints/resume?id=" + std::to_string(id), {}, std::move(done));
}

void RemoteEngine::deleteCheckpoint(int64_t id, ResultCallback done)
{
    d->send("POST", "/v1/checkpoints/delete?id=" + std::to_string(id), {}, std::move(done));
}

host::EngineSnapshot RemoteEngine::snapshot() const
{
    std::lock_guard lock(d->mutex);
    return d->snapshot;
}

std::vector<host::EngineEvent> RemoteEngine::takeEvents()
{
    std::lock_guard lock(d->mutex);
    std::vector<host::EngineEvent> out(d->events.begin(), d->events.end());
    d->events.clear();
    return out;
}

void RemoteEngine::setNotifier(std::function<void()> notify)
{
    std::lock_guard lock(d->mutex);
    d->notifier = std::move(notify);
}

bool RemoteEngine::connected() const
{
    std::lock_guard lock(d->mutex);
    return d->connected;
}

const RemoteTarget &RemoteEngine::target() const { return d->target; }

} // namespace rookery::control
