// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-node: the headless volunteer node.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <stop_token>
#include <thread>
#include <unistd.h>

#include "app/node/control_host.h"
#include "app/node/node_cli.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/log.h"
#include "engine/device/governor.h"
#include "engine/device/profile_service.h"
#include "engine/net/coordinator_address.h"
#include "engine/net/identity.h"
#include "engine/node/local_run.h"
#include "engine/node/node_status_feed.h"
#include "engine/node/swarm_node.h"

namespace {

std::atomic<bool> g_stop{false};

void onSignal(int) { g_stop.store(true); }

// The control API sees the run's governor while this lives: declared after the run, it
// detaches the governor before the run destroys it, also when the run throws.
class GovernorAttachment
{
public:
    GovernorAttachment(rookery::control::NodeControl *state, rookery::device::Governor &governor)
        : m_state(state)
    {
        if (m_state)
            m_state->setGovernor(&governor);
    }
    ~GovernorAttachment()
    {
        if (m_state)
            m_state->setGovernor(nullptr); // waits for requests still using it
    }
    GovernorAttachment(const GovernorAttachment &) = delete;
    GovernorAttachment &operator=(const GovernorAttachment &) = delete;

private:
    rookery::control::NodeControl *m_state;
};

// Keeps what an attached desktop shows besides progress: the checkpoints and, in a swarm
// (`coordinator` not empty), this node's place and peers from the coordinator's status
// API (--status-port, else one port above the coordinator's, its default).
std::unique_ptr<rookery::node::NodeStatusFeed> startStatusFeed(rookery::control::NodeControl *state,
                                                               const rookery::app::NodeOptions &options,
                                                               const std::string &coordinator)
{
    using namespace rookery;
    if (!state)
        return nullptr;
    node::NodeStatusFeedSettings s;
    s.database = std::filesystem::path(options.dataDir) / "rookery.db";
    node::NodeStatusFeed::Callbacks cb;
    cb.checkpoints = [state](std::vector<node::CheckpointView> v) { state->setCheckpoints(std::move(v)); };
    if (!coordinator.empty()) {
        const auto address = net::CoordinatorAddress::parse(coordinator);
        s.statusHost = address.host;
        s.statusPort = options.statusPort > 0 ? uint16_t(options.statusPort) : uint16_t(address.port + 1);
        s.pin = address.sha256;
        s.selfId = net::Identity::loadOrCreate(options.dataDir).nodeId();
        cb.swarm = [state, coordinator](const node::SwarmStatusView &v) {
            node::AssignmentView self = v.self;
            self.swarm = coordinator;
            state->setAssignment(self);
            state->setPeers(v.peers, v.links);
        };
    }
    cb.problem = [state](const std::string &problem) {
        if (!problem.empty())
            state->addEvent(node::EngineEvent::Level::Warning, "node", problem);
    };
    return std::make_unique<node::NodeStatusFeed>(std::move(s), std::move(cb));
}

// The local control API, unless --no-control. Its POST /v1/stop does what SIGTERM does.
std::unique_ptr<rookery::app::ControlHost> startControl(const rookery::app::NodeOptions &options,
                                                        const std::string &mode)
{
    if (options.noControl)
        return nullptr;
    auto host = std::make_unique<rookery::app::ControlHost>(options.dataDir, options.controlPort, mode,
                                                            [] { g_stop.store(true); });
    if (!options.quiet)
        std::printf("control API on 127.0.0.1:%u (token in %s/control-token)\n", unsigned(host->port()),
                    options.dataDir.c_str());
    return host;
}

rookery::control::NodeProgress nodeProgress(const rookery::node::LocalRunProgress &p)
{
    rookery::control::NodeProgress n;
    n.training.step = p.step;
    n.training.totalSteps = p.totalSteps;
    n.training.loss = p.loss;
    n.training.samplesPerSecond = p.samplesPerSecond;
    n.training.testAccuracy = p.lastEval ? p.lastEval->accuracy : -1;
    n.training.etaSeconds = p.etaSeconds;
    n.samplesTotal = p.samplesTotal;
    return n;
}

rookery::control::NodeProgress nodeProgress(const rookery::node::StageProgress &p)
{
    rookery::control::NodeProgress n;
    n.training.step = p.step;
    n.training.totalSteps = p.totalSteps;
    n.training.loss = p.loss;
    n.training.samplesPerSecond = p.samplesPerSecond;
    n.training.testAccuracy = p.testAccuracy;
    n.training.staleness = p.staleness;
    n.samplesTotal = p.samplesTotal;
    n.ringRounds = p.ringRounds;
    n.ringSkipped = p.ringSkipped;
    return n;
}

void installSignalHandlers()
{
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

int runLocal(const rookery::app::NodeOptions &options)
{
    using namespace rookery;
    const bool tty = isatty(STDOUT_FILENO);
    const bool quiet = options.quiet;
    const auto control = startControl(options, "local");
    control::NodeControl *state = control ? &control->state() : nullptr;
    node::LocalRun::Callbacks cb;
    cb.message = [quiet, state](const std::string &m) {
        if (state)
            state->addEvent(node::EngineEvent::Level::Info, "node", m);
        if (!quiet)
            std::printf("%s\n", m.c_str());
    };
    cb.progress = [tty, quiet, state](const node::LocalRunProgress &p) {
        if (state)
            state->publish(nodeProgress(p));
        if (quiet)
            return;
        std::string acc = p.lastEval ? format::percent(p.lastEval->accuracy) : "--";
        std::printf("%sstep %lld/%lld  loss %.4f  test acc %s  %s samples/s  ETA %s%s", tty ? "\r" : "",
                    (long long)p.step, (long long)p.totalSteps, p.loss, acc.c_str(),
                    format::count(int64_t(p.samplesPerSecond)).c_str(), format::duration(p.etaSeconds).c_str(),
                    tty ? "   " : "\n");
        std::fflush(stdout);
    };
    cb.evaluated = [tty, quiet](int64_t step, const train::EvalMetrics &e) {
        if (!quiet)
            std::printf("%sstep %lld: test accuracy %s, test loss %.4f\n", tty ? "\n" : "", (long long)step,
                        format::percent(e.accuracy, 2).c_str(), e.loss);
    };
    cb.checkpointStarted = [quiet](int64_t step) {
        if (!quiet)
            std::printf("checkpoint: saving step %lld\n", (long long)step);
        std::fflush(stdout);
    };
    cb.checkpointSaved = [quiet](int64_t step) {
        if (!quiet)
            std::printf("checkpoint: saved step %lld\n", (long long)step);
        std::fflush(stdout);
    };

    node::LocalRun run(options.local, cb);
    const GovernorAttachment attachment(state, run.governor());
    const auto feed = startStatusFeed(state, options, {});
    if (state) {
        node::AssignmentView a;
        a.mode = "local";
        a.swarm = "this machine";
        a.role = "whole model";
        a.stage = 0;
        a.stageCount = 1;
        a.model = options.local.model;
        state->setAssignment(a);
        state->setRunning(true);
    }
    const node::LocalRunSummary s = run.run(&g_stop);
    if (state)
        state->setRunning(false);
    if (s.stopped) {
        // "stopped: resident memory ... crossed the cap ..." -> " (resident memory ...)"
        const auto colon = s.stopReason.find(": ");
        const std::string why = colon == std::string::npos ? s.stopReason : s.stopReason.substr(colon + 2);
        const std::string note = why.empty() || why == "on request" ? "" : " (" + why + ")";
        std::printf("stopped at step %lld%s; checkpoint saved. Run the same command to resume.\n", (long long)s.endStep,
                    note.c_str());
    } else if (s.finalEval)
        std::printf("done: step %lld, test accuracy %s, test loss %.4f\n", (long long)s.endStep,
                    format::percent(s.finalEval->accuracy, 2).c_str(), s.finalEval->loss);
    return 0;
}

int runSwarm(const rookery::app::NodeOptions &options)
{
    using namespace rookery;
    const bool quiet = options.quiet;
    node::SwarmNodeSettings s;
    s.coordinator = options.join;
    s.name = options.name;
    s.dataDir = options.dataDir;
    s.datasetDir = options.datasetDir;
    s.bindAddress = options.bind;
    s.port = uint16_t(options.port);
    s.governor = options.local.governor;
    if (options.local.checkpointEvery >= 0)
        s.checkpointEvery = options.local.checkpointEvery;
    if (options.local.evalEvery >= 0)
        s.evaluateEvery = options.local.evalEvery;
    s.keepCheckpoints = options.local.keepCheckpoints;
    s.exitWhenDone = !options.stay;
    const auto control = startControl(options, "swarm");
    control::NodeControl *state = control ? &control->state() : nullptr;
    node::SwarmNode::Callbacks cb;
    cb.message = [quiet, state](const std::string &m) {
        if (state)
            state->addEvent(node::EngineEvent::Level::Info, "node", m);
        if (!quiet)
            std::printf("%s\n", m.c_str());
    };
    cb.progress = [quiet, state](const node::StageProgress &p) {
        if (state)
            state->publish(nodeProgress(p));
        if (quiet)
            return;
        std::string acc = p.testAccuracy >= 0 ? "  test acc " + format::percent(p.testAccuracy) : "";
        std::printf("step %lld/%lld  %s samples/s%s%s  rings %lld ok, %lld skipped  sent %llu bytes\n",
                    (long long)p.step, (long long)p.totalSteps, format::count(int64_t(p.samplesPerSecond)).c_str(),
                    p.loss > 0 ? ("  loss " + std::to_string(p.loss).substr(0, 6)).c_str() : "", acc.c_str(),
                    (long long)p.ringRounds, (long long)p.ringSkipped, (unsigned long long)p.bytesSent);
    };
    node::SwarmNode nodeRun(s, cb);
    const GovernorAttachment attachment(state, nodeRun.governor());
    const auto feed = startStatusFeed(state, options, options.join);
    if (state) {
        node::AssignmentView a;
        a.mode = "swarm";
        a.swarm = options.join;
        state->setAssignment(a);
        state->setRunning(true);
    }
    // A stage held by a pause would never see the stop: end the pause when one comes.
    std::jthread unpause([&nodeRun](std::stop_token quit) {
        while (!quit.stop_requested() && !g_stop.load())
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (g_stop.load())
            nodeRun.governor().resume();
    });
    const auto summary = nodeRun.run(&g_stop);
    unpause.request_stop();
    unpause.join();
    if (state)
        state->setRunning(false);
    if (summary.completed)
        std::printf("left the swarm: %s%s\n", summary.reason.c_str(),
                    summary.testAccuracy >= 0
                        ? (", final test accuracy " + format::percent(summary.testAccuracy, 2)).c_str()
                        : "");
    else
        std::printf("stopped at step %lld: %s. Run the same command to rejoin and resume.\n", (long long)summary.step,
                    summary.reason.c_str());
    return summary.failed ? 1 : 0;
}

// --profile: from the cache unless stale, else measured now (a few seconds).
int printProfile(const rookery::app::NodeOptions &options)
{
    using namespace rookery;
    const device::ProfileLookup p = device::loadCapabilityProfile(options.dataDir, options.remeasure);
    if (options.json) {
        std::printf("%s\n", device::toJson(p.profile).c_str());
    } else {
        std::printf("%s", device::describe(p.profile).c_str());
        std::printf("%-11s%s\n", "source", ((p.measured ? "measured now: " : "cache: ") + p.why).c_str());
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    using namespace rookery;
    // Line-buffered even into a pipe, so supervisors (tests, systemd, the desktop app)
    // see progress as it happens.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    app::NodeOptions options;
    try {
        if (!app::parseNodeOptions(argc, argv, options))
            return 0;
    } catch (const Error &e) {
        std::fprintf(stderr, "rookery-node: %s\n", e.what());
        return 2;
    }
    installSignalHandlers();
    try {
        if (options.profile)
            return printProfile(options);
        if (!options.join.empty())
            return runSwarm(options);
        return runLocal(options);
    } catch (const Error &e) {
        std::fprintf(stderr, "rookery-node: error: %s\n", e.what());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "rookery-node: internal error: %s\n", e.what());
        return 1;
    }
}
