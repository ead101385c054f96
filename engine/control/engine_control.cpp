// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/control/engine_control.h"

#include <charconv>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/prometheus_text.h"
#include "engine/common/version.h"
#include "engine/common/wall_clock.h"
#include "engine/control/snapshot_json.h"

namespace rookery::control {
namespace {

using Level = host::EngineEvent::Level;

constexpr size_t kMaxEvents = 512;
constexpr auto kPublishWait = std::chrono::milliseconds(1000);

ControlResponse errorResponse(int status, const std::string &text)
{
    return {status, toJson(std::map<std::string, std::string>{{"error", text}})};
}

std::optional<std::string> textArg(const std::map<std::string, std::string> &query, const std::string &key)
{
    const auto it = query.find(key);
    return it == query.end() ? std::nullopt : std::optional(it->second);
}

std::optional<int64_t> integerArg(const std::map<std::string, std::string> &query, const std::string &key)
{
    const auto text = textArg(query, key);
    if (!text)
        return std::nullopt;
    int64_t value = 0;
    const auto [end, err] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (err != std::errc() || end != text->data() + text->size())
        throw Error("'" + key + "' must be a whole number, not '" + *text + "'");
    return value;
}

} // namespace

EngineControl::EngineControl(host::EngineApi &engine, EngineControlOptions options)
    : m_engine(engine)
    , m_options(std::move(options))
    , m_startedAtMs(nowMs())
{ }

void EngineControl::note(const std::string &message)
{
    std::lock_guard lock(m_mutex);
    m_events.push_back({nowMs(), Level::Info, "control", message});
    ++m_nextEvent;
    if (m_events.size() > kMaxEvents)
        m_events.pop_front();
}

void EngineControl::drainEngineEvents()
{
    auto taken = m_engine.takeEvents();
    std::lock_guard lock(m_mutex);
    for (auto &e : taken) {
        m_events.push_back(std::move(e));
        ++m_nextEvent;
    }
    while (m_events.size() > kMaxEvents)
        m_events.pop_front();
}

ControlResponse EngineControl::withResult(const std::function<void(host::EngineApi::ResultCallback)> &command)
{
    auto result = std::make_shared<std::promise<std::string>>();
    auto future = result->get_future();
    command([result](const std::string &error) { result->set_value(error); });
    if (future.wait_for(m_options.resultWait) != std::future_status::ready)
        return {202, "{\"accepted\":true}"};
    const std::string error = future.get();
    if (!error.empty())
        return errorResponse(409, error);
    return {200, toJson(m_engine.snapshot())};
}

ControlResponse EngineControl::statusAfter(int64_t sequence)
{
    // Commands are queued to the engine's thread: answer with the state they made.
    const auto deadline = std::chrono::steady_clock::now() + kPublishWait;
    host::EngineSnapshot s = m_engine.snapshot();
    while (s.sequence == sequence && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        s = m_engine.snapshot();
    }
    return {200, toJson(s)};
}

ControlResponse EngineControl::eventPage(const ControlRequest &r)
{
    const int64_t after = integerArg(r.query, "after").value_or(0);
    drainEngineEvents();
    EventPage page;
    std::lock_guard lock(m_mutex);
    const int64_t first = m_nextEvent - int64_t(m_events.size()); // sequence of m_events.front()
    for (int64_t seq = std::max(after, first); seq < m_nextEvent; ++seq)
        page.events.push_back(m_events[size_t(seq - first)]);
    page.next = m_nextEvent;
    return {200, toJson(page)};
}

ControlResponse EngineControl::governorCommand(const ControlRequest &r)
{
    const int64_t sequence = m_engine.snapshot().sequence;
    if (r.path == "/v1/pause") {
        m_engine.pause();
        note("paused over the control API");
    } else if (r.path == "/v1/resume") {
        m_engine.resume();
        note("resumed over the control API");
    } else {
        const auto minutes = integerArg(r.query, "minutes");
        if (!minutes || *minutes < 1 || *minutes > 24 * 60)
            return errorResponse(400, "snooze needs minutes=N with N from 1 to 1440");
        m_engine.snooze(int(*minutes));
        note("snoozed for " + std::to_string(*minutes) + " minutes over the control API");
    }
    return statusAfter(sequence);
}

ControlResponse EngineControl::settingsCommand(const ControlRequest &r)
{
    if (r.method == "PUT") {
        std::map<std::string, std::string> values;
        try {
            values = keyValuesFromJson(r.body);
        } catch (const Error &e) {
            return errorResponse(400, e.what());
        }
        auto response = withResult([&](auto done) { m_engine.applyGovernorSettings(values, std::move(done)); });
        if (response.status == 409)
            response.status = 400; // the engine refused the values
        if (response.status != 200)
            return response;
        note("new governor settings over the control API");
    }
    return {200, toJson(m_engine.governorSettings())};
}

ControlResponse EngineControl::jobCommand(const ControlRequest &r)
{
    if (r.path == "/v1/checkpoints/delete") {
        const auto id = integerArg(r.query, "id");
        if (!id)
            return errorResponse(400, "delete needs id=N, a checkpoint's id from the status");
        return withResult([&](auto done) { m_engine.deleteCheckpoint(*id, std::move(done)); });
    }
    if (!m_options.jobCommands)
        return errorResponse(409, m_options.refusal);
    if (r.path == "/v1/local")
        return withResult([&](auto done) { m_engine.startLocal(std::move(done)); });
    if (r.path == "/v1/join") {
        const auto body = keyValuesFromJson(r.body.empty() ? "{}" : r.body);
        const auto address = body.find("address");
        if (address == body.end() || address->second.empty())
            return errorResponse(400, "join needs a body {\"address\": \"wss://host:port/#sha256=...\"}");
        return withResult([&](auto done) { m_engine.joinSwarm(address->second, std::move(done)); });
    }
    if (r.path == "/v1/demo-swarm") {
        const auto nodes = integerArg(r.query, "nodes").value_or(4);
        return withResult([&](auto done) { m_engine.startDemoSwarm(int(nodes), std::move(done)); });
    }
    const auto id = integerArg(r.query, "id");
    if (!id)
        return errorResponse(400, "resume needs id=N, a checkpoint's id from the status");
    return withResult([&](auto done) { m_engine.resumeCheckpoint(*id, std::move(done)); });
}

ControlResponse EngineControl::handle(const ControlRequest &r)
{
    try {
        return route(r);
    } catch (const Error &e) {
        return errorResponse(400, e.what());
    }
}

ControlResponse EngineControl::route(const ControlRequest &r)
{
    const bool get = r.method == "GET" || r.method == "HEAD";
    const bool post = r.method == "POST";
    auto wrongMethod = [&r](const char *allowed) {
        return errorResponse(405, r.path + " takes " + allowed + ", not " + r.method);
    };
    if (r.path == "/v1/status")
        return get ? ControlResponse{200, toJson(m_engine.snapshot())} : wrongMethod("GET");
    if (r.path == "/v1/events")
        return get ? eventPage(r) : wrongMethod("GET");
    if (r.path == "/v1/pause" || r.path == "/v1/resume" || r.path == "/v1/snooze")
        return post ? governorCommand(r) : wrongMethod("POST");
    if (r.path == "/v1/governor/settings")
        return get || r.method == "PUT" ? settingsCommand(r) : wrongMethod("GET or PUT");
    if (r.path == "/v1/consent") {
        if (!post)
            return wrongMethod("POST");
        if (!m_options.jobCommands)
            return errorResponse(409, m_options.refusal);
        const auto given = textArg(r.query, "given");
        if (given != "true" && given != "false")
            return errorResponse(400, "consent needs given=true or given=false");
        m_engine.setConsent(*given == "true");
        return {200, toJson(m_engine.snapshot())};
    }
    if (r.path == "/v1/stop") {
        if (!post)
            return wrongMethod("POST");
        note("asked to stop over the control API");
        m_engine.stopTraining([](const std::string &) {});
        return {202, "{\"stopping\":true}"};
    }
    if (r.path == "/v1/local" || r.path == "/v1/join" || r.path == "/v1/demo-swarm" ||
        r.path == "/v1/checkpoints/resume" || r.path == "/v1/checkpoints/delete")
        return post ? jobCommand(r) : wrongMethod("POST");
    if (r.path == "/metrics")
        return get ? ControlResponse{200, metrics(), std::string(PrometheusText::kContentType)} : wrongMethod("GET");
    if (r.path == "/")
        return {200, "{\"endpoints\":[\"/v1/status\",\"/v1/events\",\"/v1/consent\",\"/v1/local\",\"/v1/join\","
                     "\"/v1/demo-swarm\",\"/v1/stop\",\"/v1/pause\",\"/v1/resume\",\"/v1/snooze\","
                     "\"/v1/governor/settings\",\"/v1/checkpoints/resume\",\"/v1/checkpoints/delete\",\"/metrics\"]}"};
    return errorResponse(404, "no such path '" + r.path + "'; GET / lists the endpoints");
}

std::string EngineControl::metrics() const
{
    const host::EngineSnapshot s = m_engine.snapshot();
    PrometheusText m;
    using Type = PrometheusText::Type;
    m.gauge("rookery_node_info", "This node: its software version and mode (idle, local or swarm).", 1,
            {{"version", kVersion}, {"mode", s.assignment.mode}, {"model", s.assignment.model}});
    m.gauge("rookery_node_start_time_seconds", "When this node process started, in seconds since the Unix epoch.",
            double(m_startedAtMs) / 1000.0);
    m.gauge("rookery_node_training", "1 while a training job exists (it may be paused), else 0.", s.running ? 1 : 0);
    m.gauge("rookery_node_samples_per_second", "Training throughput of this node, smoothed.",
            s.training.samplesPerSecond);
    m.counter("rookery_node_samples_total", "Training samples this node has computed over the life of its database.",
              double(s.contribution.samplesTotal));
    m.gauge("rookery_node_step", "Optimizer steps of the run completed so far.", double(s.training.step));
    m.gauge("rookery_node_steps_target", "Optimizer steps the run trains to.", double(s.training.totalSteps));
    m.gauge("rookery_node_loss", "Training loss, smoothed (0 on stages that do not compute it).", s.training.loss);
    if (s.training.testAccuracy >= 0)
        m.gauge("rookery_node_test_accuracy", "Accuracy on the test set at the last evaluation, 0..1.",
                s.training.testAccuracy);
    if (s.assignment.mode == "swarm") {
        m.counter("rookery_node_ring_rounds_total", "Ring averaging rounds completed.", double(s.training.ringRounds));
        m.counter("rookery_node_ring_skipped_total", "Ring averaging rounds abandoned.",
                  double(s.training.ringSkipped));
    }
    m.family("rookery_node_governor_state", Type::Gauge,
             "The resource governor's state: 1 for the state it is in, 0 for the others.");
    for (const char *state : {"running", "throttled", "paused", "stopped", "waiting"})
        m.sample(s.governor.state == state ? 1 : 0, {{"state", state}});
    m.gauge("rookery_node_governor_paused_by_user", "1 while paused by the user (pause or snooze), else 0.",
            s.governor.pausedByUser ? 1 : 0);
    m.gauge("rookery_node_governor_cpu_percent", "CPU-time cap in force, in percent of the allowed cores.",
            s.governor.cpuPercent);
    m.gauge("rookery_node_governor_cores", "Cores the governor allows right now.", s.governor.cores);
    return m.text();
}

} // namespace rookery::control
