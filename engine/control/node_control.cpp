// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/control/node_control.h"

#include <charconv>
#include <chrono>
#include <map>
#include <optional>

#include "engine/common/error.h"
#include "engine/common/prometheus_text.h"
#include "engine/common/version.h"
#include "engine/control/snapshot_json.h"
#include "engine/device/governor.h"
#include "engine/node/governor_view.h"

namespace rookery::control {
namespace {

constexpr size_t kMaxEvents = 512;

int64_t unixMillis()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

ControlResponse errorResponse(int status, const std::string &text)
{
    return {status, toJson(std::map<std::string, std::string>{{"error", text}})};
}

// A count that the run may restart from zero (a new assignment, a new session) turned
// into one that only grows, as a Prometheus counter must.
void accumulate(int64_t &total, int64_t previous, int64_t now) { total += now >= previous ? now - previous : now; }

std::optional<int64_t> integerArg(const std::map<std::string, std::string> &query, const std::string &key)
{
    const auto it = query.find(key);
    if (it == query.end())
        return std::nullopt;
    int64_t value = 0;
    const auto [end, err] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
    if (err != std::errc() || end != it->second.data() + it->second.size())
        throw Error("'" + key + "' must be a whole number, not '" + it->second + "'");
    return value;
}

} // namespace

NodeControl::NodeControl(std::string mode, std::function<void()> requestStop)
    : m_mode(std::move(mode))
    , m_requestStop(std::move(requestStop))
    , m_startedAtMs(unixMillis())
{
    m_snapshot.consentGiven = true; // a headless node runs because its operator started it
    m_snapshot.assignment.mode = m_mode;
}

void NodeControl::setGovernor(device::Governor *governor)
{
    {
        std::unique_lock lock(m_governorMutex); // waits for requests using the old one
        m_governor = governor;
    }
    std::lock_guard lock(m_mutex);
    ++m_snapshot.sequence;
}

void NodeControl::setAssignment(const node::AssignmentView &assignment)
{
    std::lock_guard lock(m_mutex);
    m_snapshot.assignment = assignment;
    ++m_snapshot.sequence;
}

void NodeControl::setPeers(std::vector<node::PeerView> peers, std::vector<node::PeerLinkView> links)
{
    std::lock_guard lock(m_mutex);
    if (peers == m_snapshot.peers && links == m_snapshot.links)
        return;
    m_snapshot.peers = std::move(peers);
    m_snapshot.links = std::move(links);
    ++m_snapshot.sequence;
}

void NodeControl::setCheckpoints(std::vector<node::CheckpointView> checkpoints)
{
    std::lock_guard lock(m_mutex);
    if (checkpoints == m_snapshot.checkpoints)
        return;
    m_snapshot.checkpoints = std::move(checkpoints);
    ++m_snapshot.sequence;
}

void NodeControl::setRunning(bool running)
{
    std::lock_guard lock(m_mutex);
    m_snapshot.running = running;
    ++m_snapshot.sequence;
}

void NodeControl::setError(const std::string &error)
{
    std::lock_guard lock(m_mutex);
    m_snapshot.lastError = error;
    ++m_snapshot.sequence;
}

void NodeControl::publish(const NodeProgress &p)
{
    std::lock_guard lock(m_mutex);
    accumulate(m_samplesTotal, m_last.samplesTotal, p.samplesTotal);
    accumulate(m_ringRounds, m_last.ringRounds, p.ringRounds);
    accumulate(m_ringSkipped, m_last.ringSkipped, p.ringSkipped);
    m_last = p;
    m_snapshot.training = p.training;
    m_snapshot.contribution.samplesTotal = m_samplesTotal;
    ++m_snapshot.sequence;
}

void NodeControl::addEvent(node::EngineEvent::Level level, const std::string &area, const std::string &message)
{
    std::lock_guard lock(m_mutex);
    m_events.push_back({unixMillis(), level, area, message});
    ++m_nextEvent;
    if (m_events.size() > kMaxEvents)
        m_events.pop_front();
}

NodeControl::GovernorLease NodeControl::leaseGovernor() const
{
    std::shared_lock lock(m_governorMutex);
    device::Governor *governor = m_governor;
    return {std::move(lock), governor};
}

node::GovernorView NodeControl::governorView() const
{
    const auto lease = leaseGovernor();
    node::GovernorView v;
    if (!lease.governor) {
        v.state = "waiting";
        v.reason = "the node is starting";
        return v;
    }
    // Outside m_mutex: status() may call the governor's observer, which may log here.
    return node::governorView(lease.governor->status());
}

node::EngineSnapshot NodeControl::snapshot() const
{
    node::GovernorView governor = governorView();
    std::lock_guard lock(m_mutex);
    node::EngineSnapshot s = m_snapshot;
    s.governor = std::move(governor);
    return s;
}

std::string NodeControl::metrics() const
{
    const node::EngineSnapshot s = snapshot();
    int64_t samples, rounds, skipped;
    {
        std::lock_guard lock(m_mutex);
        samples = m_samplesTotal;
        rounds = m_ringRounds;
        skipped = m_ringSkipped;
    }
    PrometheusText m;
    using Type = PrometheusText::Type;
    m.gauge("rookery_node_info", "This node: its software version and mode (local or swarm).", 1,
            {{"version", kVersion}, {"mode", m_mode}, {"model", s.assignment.model}});
    m.gauge("rookery_node_start_time_seconds", "When this node process started, in seconds since the Unix epoch.",
            double(m_startedAtMs) / 1000.0);
    m.gauge("rookery_node_training", "1 while a training job exists (it may be paused), else 0.", s.running ? 1 : 0);
    m.gauge("rookery_node_samples_per_second", "Training throughput of this node, smoothed.",
            s.training.samplesPerSecond);
    m.counter("rookery_node_samples_total", "Training samples this node process has computed.", double(samples));
    m.gauge("rookery_node_step", "Optimizer steps of the run completed so far.", double(s.training.step));
    m.gauge("rookery_node_steps_target", "Optimizer steps the run trains to.", double(s.training.totalSteps));
    m.gauge("rookery_node_loss", "Training loss, smoothed (0 on stages that do not compute it).", s.training.loss);
    if (s.training.testAccuracy >= 0)
        m.gauge("rookery_node_test_accuracy", "Accuracy on the test set at the last evaluation, 0..1.",
                s.training.testAccuracy);
    if (m_mode == "swarm") {
        m.counter("rookery_node_ring_rounds_total", "Ring averaging rounds completed.", double(rounds));
        m.counter("rookery_node_ring_skipped_total", "Ring averaging rounds abandoned.", double(skipped));
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

ControlResponse NodeControl::governorCommand(const ControlRequest &r)
{
    {
        const auto lease = leaseGovernor();
        if (!lease.governor)
            return errorResponse(503, "the node is still starting; try again in a moment");
        if (r.path == "/v1/pause") {
            lease.governor->pause();
            addEvent(node::EngineEvent::Level::Info, "control", "paused over the control API");
        } else if (r.path == "/v1/resume") {
            lease.governor->resume();
            addEvent(node::EngineEvent::Level::Info, "control", "resumed over the control API");
        } else {
            const auto minutes = integerArg(r.query, "minutes");
            if (!minutes || *minutes < 1 || *minutes > 24 * 60)
                return errorResponse(400, "snooze needs minutes=N with N from 1 to 1440");
            lease.governor->snooze(std::chrono::minutes(*minutes));
            addEvent(node::EngineEvent::Level::Info, "control",
                     "snoozed for " + std::to_string(*minutes) + " minutes over the control API");
        }
    } // the snapshot takes its own lease
    return {200, toJson(snapshot())};
}

ControlResponse NodeControl::settingsCommand(const ControlRequest &r)
{
    const auto lease = leaseGovernor();
    device::Governor *governor = lease.governor;
    if (!governor)
        return errorResponse(503, "the node is still starting; try again in a moment");
    if (r.method == "PUT") {
        try {
            governor->setSettings(device::fromKeyValues(keyValuesFromJson(r.body), governor->settings()));
        } catch (const Error &e) {
            return errorResponse(400, e.what());
        }
        addEvent(node::EngineEvent::Level::Info, "control", "new governor settings over the control API");
    }
    return {200, toJson(device::toKeyValues(governor->settings()))};
}

ControlResponse NodeControl::handle(const ControlRequest &r)
{
    const bool get = r.method == "GET" || r.method == "HEAD";
    const bool post = r.method == "POST";
    auto wrongMethod = [&r](const char *allowed) {
        return errorResponse(405, r.path + " takes " + allowed + ", not " + r.method);
    };
    try {
        if (r.path == "/v1/status")
            return get ? ControlResponse{200, toJson(snapshot())} : wrongMethod("GET");
        if (r.path == "/v1/events") {
            if (!get)
                return wrongMethod("GET");
            const int64_t after = integerArg(r.query, "after").value_or(0);
            EventPage page;
            std::lock_guard lock(m_mutex);
            const int64_t first = m_nextEvent - int64_t(m_events.size()); // sequence of m_events.front()
            for (int64_t seq = std::max(after, first); seq < m_nextEvent; ++seq)
                page.events.push_back(m_events[size_t(seq - first)]);
            page.next = m_nextEvent;
            return {200, toJson(page)};
        }
        if (r.path == "/v1/pause" || r.path == "/v1/resume" || r.path == "/v1/snooze")
            return post ? governorCommand(r) : wrongMethod("POST");
        if (r.path == "/v1/governor/settings")
            return get || r.method == "PUT" ? settingsCommand(r) : wrongMethod("GET or PUT");
        if (r.path == "/v1/stop") {
            if (!post)
                return wrongMethod("POST");
            addEvent(node::EngineEvent::Level::Info, "control", "asked to stop over the control API");
            m_requestStop();
            return {202, "{\"stopping\":true}"};
        }
        if (r.path == "/metrics")
            return get ? ControlResponse{200, metrics(), std::string(PrometheusText::kContentType)}
                       : wrongMethod("GET");
        if (r.path == "/")
            return {200, "{\"endpoints\":[\"/v1/status\",\"/v1/events\",\"/v1/pause\",\"/v1/resume\",\"/v1/snooze\","
                         "\"/v1/governor/settings\",\"/v1/stop\",\"/metrics\"]}"};
    } catch (const Error &e) {
        return errorResponse(400, e.what());
    }
    return errorResponse(404, "no such path '" + r.path + "'; GET / lists the endpoints");
}

} // namespace rookery::control
