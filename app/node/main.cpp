// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-node: the headless volunteer node. It hosts the same engine as the desktop app
// (NodeEngine); its command line is the operator's consent, and its job starts at launch.
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <unistd.h>

#include "app/node/node_cli.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/value_precision.h"
#include "engine/control/control_host.h"
#include "engine/device/profile_service.h"
#include "engine/host/node_engine.h"
#include "engine/net/wire_message.h"

namespace {

using namespace rookery;

std::atomic<bool> g_stop{false};

void onSignal(int) { g_stop.store(true); }

void installSignalHandlers()
{
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

// How the job ended: the first word on it wins (a start refused, or the job's end).
struct JobEnd
{
    std::mutex mutex;
    std::condition_variable wake;
    std::optional<std::pair<std::string, bool>> outcome; ///< what, and whether it failed
    std::atomic<bool> summaryPrinted{false};             ///< the job's own last line said how it ended

    void finish(const std::string &what, bool failed)
    {
        std::lock_guard lock(mutex);
        if (!outcome)
            outcome.emplace(what, failed);
        wake.notify_all();
    }
};

// "stopped: resident memory ... crossed the cap ..." -> " (resident memory ...)"
std::string stopNote(const std::string &reason)
{
    const auto colon = reason.find(": ");
    const std::string why = colon == std::string::npos ? reason : reason.substr(colon + 2);
    return why.empty() || why == "on request" ? "" : " (" + why + ")";
}

host::WholeModelRun::Callbacks wholeModelConsole(bool quiet)
{
    const bool tty = isatty(STDOUT_FILENO);
    host::WholeModelRun::Callbacks cb;
    if (quiet)
        return cb;
    cb.message = [](const std::string &m) { std::printf("%s\n", m.c_str()); };
    cb.progress = [tty](const host::WholeModelProgress &p) {
        std::string acc = p.lastEval ? format::percent(p.lastEval->accuracy) : "--";
        std::printf("%sstep %lld/%lld  loss %.4f  test acc %s  %s samples/s  ETA %s%s", tty ? "\r" : "",
                    (long long)p.step, (long long)p.totalSteps, p.loss, acc.c_str(),
                    format::count(int64_t(p.samplesPerSecond)).c_str(), format::duration(p.etaSeconds).c_str(),
                    tty ? "   " : "\n");
        std::fflush(stdout);
    };
    cb.evaluated = [tty](int64_t step, const train::EvalMetrics &e) {
        std::printf("%sstep %lld: test accuracy %s, test loss %.4f\n", tty ? "\n" : "", (long long)step,
                    format::percent(e.accuracy, 2).c_str(), e.loss);
    };
    cb.checkpointStarted = [](int64_t step) {
        std::printf("checkpoint: saving step %lld\n", (long long)step);
        std::fflush(stdout);
    };
    cb.checkpointSaved = [](int64_t step) {
        std::printf("checkpoint: saved step %lld\n", (long long)step);
        std::fflush(stdout);
    };
    return cb;
}

participant::SwarmNode::Callbacks swarmConsole(bool quiet)
{
    participant::SwarmNode::Callbacks cb;
    if (quiet)
        return cb;
    cb.message = [](const std::string &m) { std::printf("%s\n", m.c_str()); };
    cb.progress = [](const participant::StageProgress &p) {
        std::string acc = p.testAccuracy >= 0 ? "  test acc " + format::percent(p.testAccuracy) : "";
        // Roots: microbatches in flight and how stale their gradients are on average.
        char window[64] = "";
        if (p.window > 0)
            std::snprintf(window, sizeof window, "  window %d, staleness %.1f", p.window, p.staleness);
        std::printf(
            "step %lld/%lld  %s samples/s%s%s%s  rings %lld ok, %lld skipped%s  sent %llu bytes (%llu in rings)\n",
            (long long)p.step, (long long)p.totalSteps, format::count(int64_t(p.samplesPerSecond)).c_str(), window,
            p.loss > 0 ? ("  loss " + std::to_string(p.loss).substr(0, 6)).c_str() : "", acc.c_str(),
            (long long)p.ringRounds, (long long)p.ringSkipped,
            p.ringRejected > 0 ? (" (" + std::to_string(p.ringRejected) + " rejected)").c_str() : "",
            (unsigned long long)p.bytesSent, (unsigned long long)p.ringBytesSent);
    };
    return cb;
}

// What the terminal shows: progress unless --quiet, and always how the job ended.
host::JobConsole console(const app::NodeOptions &options, JobEnd &end)
{
    host::JobConsole c;
    c.wholeModel = wholeModelConsole(options.quiet);
    c.swarm = swarmConsole(options.quiet);
    c.wholeModelDone = [&end](const host::WholeModelSummary &s) {
        if (s.stopped)
            std::printf("stopped at step %lld%s; checkpoint saved. Run the same command to resume.\n",
                        (long long)s.endStep, stopNote(s.stopReason).c_str());
        else if (s.finalEval)
            std::printf("done: step %lld, test accuracy %s, test loss %.4f\n", (long long)s.endStep,
                        format::percent(s.finalEval->accuracy, 2).c_str(), s.finalEval->loss);
        end.summaryPrinted = true;
    };
    c.swarmDone = [&end](const participant::SwarmNodeSummary &s) {
        if (s.completed)
            std::printf("left the swarm: %s%s\n", s.reason.c_str(),
                        s.testAccuracy >= 0 ? (", final test accuracy " + format::percent(s.testAccuracy, 2)).c_str()
                                            : "");
        else if (s.reason.rfind("quarantined", 0) == 0) // banned for the run: rejoining cannot work
            std::printf("stopped at step %lld: %s. This coordinator will not take this node again in this run.\n",
                        (long long)s.step, s.reason.c_str());
        else
            std::printf("stopped at step %lld: %s. Run the same command to rejoin and resume.\n", (long long)s.step,
                        s.reason.c_str());
        end.summaryPrinted = true;
    };
    c.ended = [&end](const std::string &outcome, bool failed) { end.finish(outcome, failed); };
    return c;
}

host::NodeEngineSettings engineSettings(const app::NodeOptions &o)
{
    host::NodeEngineSettings s;
    s.dataDir = o.dataDir;
    s.datasetDir = o.datasetDir;
    s.local = o.local;
    s.extendFinishedRuns = false; // --steps is where the run ends
    s.governor = o.local.governor;
    s.swarm.name = o.name;
    s.swarm.bindAddress = o.bind;
    s.swarm.publicAddress = o.publicAddress;
    s.swarm.mapPort = !o.noPortMapping;
    s.swarm.relayPort = uint16_t(o.serveRelay);
    s.swarm.relayBytesPerSecondPerPair = uint64_t(o.relayMbit * 1e6 / 8);
    s.swarm.peerCompression = net::compressionFromName(o.peerCompression);
    s.swarm.ringPrecision = precisionFromName(o.ringCompression);
    s.swarm.port = uint16_t(o.port);
    if (o.local.checkpointEvery >= 0)
        s.swarm.checkpointEvery = o.local.checkpointEvery;
    if (o.checkpointSeconds >= 0)
        s.swarm.checkpointInterval = std::chrono::seconds(o.checkpointSeconds);
    if (o.local.evalEvery >= 0)
        s.swarm.evaluateEvery = o.local.evalEvery;
    s.swarm.evaluateSamples = o.evalSamples;
    s.swarm.dataCacheBytes = uint64_t(o.dataCacheMiB) << 20;
    s.swarm.keepCheckpoints = o.local.keepCheckpoints;
    s.swarm.exitWhenDone = !o.stay;
    s.statusPort = uint16_t(o.statusPort);
    s.measureAtConsent = false; // a swarm node measures before it registers; a local run needs none
    s.lowerJobPriority = false; // the service manager sets a service's priority
    return s;
}

// The local control API, unless --no-control. Its POST /v1/stop does what SIGTERM does.
std::unique_ptr<control::ControlHost> startControl(const app::NodeOptions &options, host::EngineApi &engine)
{
    if (options.noControl)
        return nullptr;
    control::EngineControlOptions c;
    c.jobCommands = false;
    c.refusal = "this node trains what it was started with; restart rookery-node with other options to change that";
    auto host = std::make_unique<control::ControlHost>(options.dataDir, options.controlPort, engine, std::move(c));
    if (!options.quiet)
        std::printf("control API on 127.0.0.1:%u (token in %s/control-token)\n", unsigned(host->port()),
                    options.dataDir.c_str());
    return host;
}

int runNode(const app::NodeOptions &options)
{
    JobEnd end;
    host::NodeEngineSettings settings = engineSettings(options);
    settings.console = console(options, end);
    host::NodeEngine engine(std::move(settings));
    const auto control = startControl(options, engine);
    engine.setConsent(true); // the operator's command line is the consent
    auto started = [&end](const std::string &error) {
        if (!error.empty())
            end.finish(error, true);
    };
    if (options.join.empty())
        engine.startLocal(started);
    else
        engine.joinSwarm(options.join, started);
    bool stopAsked = false;
    std::unique_lock lock(end.mutex);
    while (!end.wake.wait_for(lock, std::chrono::milliseconds(50), [&end] { return end.outcome.has_value(); }))
        if (g_stop.load() && !std::exchange(stopAsked, true))
            engine.stopTraining([](const std::string &) {}); // a paused job sees its gate close
    const auto [outcome, failed] = *end.outcome;
    if (failed && !end.summaryPrinted)
        std::fprintf(stderr, "rookery-node: error: %s\n", outcome.c_str());
    return failed ? 1 : 0;
}

// --profile: from the cache unless stale, else measured now (a few seconds).
int printProfile(const app::NodeOptions &options)
{
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
        return options.profile ? printProfile(options) : runNode(options);
    } catch (const Error &e) {
        std::fprintf(stderr, "rookery-node: error: %s\n", e.what());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "rookery-node: internal error: %s\n", e.what());
        return 1;
    }
}
