// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-node: the headless volunteer node.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <unistd.h>

#include "app/node/node_cli.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/log.h"
#include "engine/device/profile_service.h"
#include "engine/node/local_run.h"
#include "engine/node/swarm_node.h"

namespace {

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

int runLocal(const rookery::app::NodeOptions &options)
{
    using namespace rookery;
    const bool tty = isatty(STDOUT_FILENO);
    const bool quiet = options.quiet;
    node::LocalRun::Callbacks cb;
    cb.message = [quiet](const std::string &m) {
        if (!quiet)
            std::printf("%s\n", m.c_str());
    };
    cb.progress = [tty, quiet](const node::LocalRunProgress &p) {
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
    const node::LocalRunSummary s = run.run(&g_stop);
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
    if (options.local.checkpointEvery > 0)
        s.checkpointEvery = options.local.checkpointEvery;
    if (options.local.evalEvery > 0)
        s.evaluateEvery = options.local.evalEvery;
    s.keepCheckpoints = options.local.keepCheckpoints;
    s.exitWhenDone = !options.stay;
    node::SwarmNode::Callbacks cb;
    cb.message = [quiet](const std::string &m) {
        if (!quiet)
            std::printf("%s\n", m.c_str());
    };
    cb.progress = [quiet](const node::StageProgress &p) {
        if (quiet)
            return;
        std::string acc = p.testAccuracy >= 0 ? "  test acc " + format::percent(p.testAccuracy) : "";
        std::printf("step %lld/%lld  %s samples/s%s%s  rings %lld ok, %lld skipped\n", (long long)p.step,
                    (long long)p.totalSteps, format::count(int64_t(p.samplesPerSecond)).c_str(),
                    p.loss > 0 ? ("  loss " + std::to_string(p.loss).substr(0, 6)).c_str() : "", acc.c_str(),
                    (long long)p.ringRounds, (long long)p.ringSkipped);
    };
    node::SwarmNode nodeRun(s, cb);
    const auto summary = nodeRun.run(&g_stop);
    if (summary.completed)
        std::printf("left the swarm: %s%s\n", summary.reason.c_str(),
                    summary.testAccuracy >= 0
                        ? (", final test accuracy " + format::percent(summary.testAccuracy, 2)).c_str()
                        : "");
    else
        std::printf("stopped at step %lld: %s. Run the same command to rejoin and resume.\n", (long long)summary.step,
                    summary.reason.c_str());
    return 0;
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
