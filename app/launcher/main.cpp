// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-local-swarm: a coordinator and N nodes on this machine, supervised.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/command_line.h"
#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/launcher/swarm_launcher.h"

namespace {

std::atomic<bool> g_stop{false};
void onSignal(int) { g_stop.store(true); }

} // namespace

int main(int argc, char **argv)
{
    using namespace rookery;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    launcher::SwarmLauncherSettings s;
    std::string workDir = (defaultDataDir() / "local-swarm").string();
    std::string datasetDir = defaultFashionMnistDir().string();
    std::string model = "mlp", optimizer = "sgd", job;
    int64_t steps = 600, interval = 10, microbatch = 64, seed = 1;
    double lr = 0.05;
    int cores = 1;
    int cpuPercent = 100;
    int64_t memoryCapMiB = 0;
    int64_t graceSeconds = 0;
    int64_t certificateSeconds = 0;
    int64_t checkpointSeconds = -1;
    int64_t evalEvery = -1;
    int poisoner = 0;
    std::string misbehaviour = "ring-poison";
    int withoutData = 0;
    bool fresh = false, quiet = false, verbose = false, throughRelay = false, overlap = false, stragglers = false;
    CLI::App p("Starts a Rookery swarm on this machine: a coordinator and N nodes, each its own process,\n"
               "talking over TLS on loopback. Nodes killed by a signal are restarted and resume from their\n"
               "checkpoints. Exits when the run is complete.",
               "rookery-local-swarm");
    cli::configure(p);
    cli::addWholeNumber(p, "--nodes", s.nodes, 1, 64, "N", "nodes to start");
    cli::addWholeNumber(p, "--cluster-size", s.clusterSize, 0, 16, "N",
                        "pipeline stages per cluster (0: let the planner decide)");
    p.add_option("--work-dir", workDir, "data directories of the coordinator and nodes")->type_name("DIR");
    p.add_option("--dataset-dir", datasetDir, "Fashion-MNIST's .gz files")->type_name("DIR");
    p.add_option("--job", job,
                 "a job file for the coordinator (its --job; docs/job-file.md): its model, optimizer, microbatch, "
                 "steps and seed; the options below that are given override it")
        ->type_name("FILE");
    cli::addChoice(p, "--model", model, {"mlp", "cnn"}, "model to train");
    cli::addChoice(p, "--optimizer", optimizer, {"sgd", "adamw"}, "optimizer");
    cli::addNumber(p, "--lr", lr, 1e-6, 10, "RATE", "learning rate");
    cli::addWholeNumber(p, "--steps", steps, 1, int64_t(1) << 40, "N", "optimizer steps to train");
    cli::addWholeNumber(p, "--averaging-interval", interval, 1, 1 << 20, "N",
                        "optimizer steps between ring averagings");
    cli::addWholeNumber(p, "--microbatch", microbatch, 1, 4096, "N", "samples per microbatch");
    cli::addWholeNumber(p, "--seed", seed, 0, INT64_MAX, "N", "random seed of the run");
    cli::addWholeNumber(p, "--cores-per-node", cores, 1, 256, "N", "cores each node may use");
    cli::addWholeNumber(p, "--cpu-percent", cpuPercent, 1, 100, "PCT",
                        "share of those cores each node may keep busy (its governor's CPU cap)");
    cli::addWholeNumber(p, "--memory-cap", memoryCapMiB, 0, int64_t(1) << 30, "MIB",
                        "resident memory each node process may hold, in MiB (its --memory-cap; 0: no cap); a node "
                        "holds about 220 MiB before any model and offers the rest for training");
    cli::addWholeNumber(p, "--grace", graceSeconds, 0, 3600, "S",
                        "how long a node away keeps its place (the coordinator's --rejoin-grace-ms; 0: its "
                        "default)");
    cli::addWholeNumber(p, "--certificate-lifetime", certificateSeconds, 5, 365 * 86400, "S",
                        "how long the nodes' certificates are valid (the coordinator's --certificate-lifetime-s; "
                        "default 30 days); nodes renew them at half of it");
    cli::addWholeNumber(p, "--eval-every", evalEvery, 0, 1'000'000'000, "N",
                        "roots test their pipeline's model every N steps (their --eval-every; default 200; 0: only "
                        "at the end)")
        ->default_str("");
    cli::addWholeNumber(p, "--checkpoint-seconds", checkpointSeconds, 0, 86400, "S",
                        "nodes checkpoint at most every S seconds (their --checkpoint-seconds; default 20; 0: "
                        "every 50 steps)")
        ->default_str("");
    std::string peerCompression = "bf16";
    cli::addChoice(p, "--peer-compression", peerCompression, {"none", "fp16", "bf16"},
                   "how activations and gradients travel between the nodes (their --peer-compression)");
    std::string ringCompression = "int8";
    cli::addChoice(p, "--ring-compression", ringCompression, {"none", "bf16", "int8", "int4"},
                   "how the nodes' ring chunks travel (their --ring-compression)");
    cli::addWholeNumber(p, "--nodes-without-data", withoutData, 0, 64, "N",
                        "nodes 1..N have no copy of the dataset: as roots they fetch their shards from the "
                        "coordinator");
    p.add_flag("--fresh", fresh, "delete the work directory first (a new run)");
    p.add_flag("--straggler-check", stragglers,
               "the coordinator re-cuts a cluster around a stage much slower than its peers (its "
               "--straggler-check 5; experimental)");
    cli::addWholeNumber(p, "--testing-misbehave", poisoner, 1, 64, "N",
                        "testing: node N sends poisoned values (ROOKERY_TESTING_MISBEHAVE), to watch the others "
                        "refuse them and the coordinator quarantine it");
    p.add_option("--testing-misbehaviour", misbehaviour,
                 "testing: what node N of --testing-misbehave does: ring-poison (ring chunks scaled by -1e6), "
                 "activation-scale (activations scaled by 1e6), nan-gradients, forged-finished (a 'finished' "
                 "after every 40th activation or gradient), forged-failed (a 'failed' after every 40th), "
                 "forged-weights (NaN weights replies), forged-tally (test tallies it did not count), claim-capacity "
                 "(a profile claiming 10^6 GFLOP/s), "
                 "claim-little-memory (a profile claiming 512 KiB of memory), or several, comma-separated")
        ->type_name("KINDS");
    p.add_flag("--quiet", quiet, "print only the nodes' main events, not their progress lines");
    p.add_flag("--verbose", verbose,
               "print the programs' info log lines too (links measured, re-plans, ring rounds), not only their "
               "main events");
    int64_t maxWindow = -1;
    cli::addWholeNumber(p, "--max-window", maxWindow, 0, 16, "N",
                        "the most microbatches a pipeline's first stage keeps in flight, the staleness cap (the "
                        "coordinator's --max-window; 0: the nodes' default, 5)")
        ->default_str("");
    p.add_flag("--overlap-averaging", overlap,
               "averaging rounds run beside training, on a snapshot of the weights (the coordinator's "
               "--overlap-averaging)");
    p.add_flag("--through-relay", throughRelay,
               "every node advertises an address nobody can dial, as if behind NAT, so that every link goes "
               "through the coordinator's relay");
    p.footer("Examples:\n  rookery-local-swarm --nodes 4 --cluster-size 2    two clusters of two pipeline stages\n"
             "  rookery-local-swarm --nodes 2 --job resources/jobs/rescnn.json --steps 200\n\n"
             "Ctrl-C stops every process; each node checkpoints first.");
    try {
        if (cli::parse(p, argc, argv) != cli::Outcome::Run)
            return 0;
    } catch (const Error &e) {
        std::fprintf(stderr, "rookery-local-swarm: %s\n", e.what());
        return 2;
    }
    if (!job.empty() && !std::filesystem::is_regular_file(job)) {
        std::fprintf(stderr, "rookery-local-swarm: --job %s: no such file\n", job.c_str());
        return 2;
    }
    s.workDir = workDir;
    s.datasetDir = datasetDir;
    // Without a job file every run option goes to the coordinator, defaults included;
    // with one, only those given here, so that the file's own settings stand.
    const std::vector<std::pair<std::string, std::string>> runOptions{
        {"--model", model},
        {"--optimizer", optimizer},
        {"--lr", std::to_string(lr)},
        {"--steps", std::to_string(steps)},
        {"--averaging-interval", std::to_string(interval)},
        {"--microbatch", std::to_string(microbatch)},
        {"--seed", std::to_string(seed)}};
    if (!job.empty())
        s.coordinatorArgs = {"--job", std::filesystem::absolute(job).string()};
    for (const auto &[option, value] : runOptions)
        if (job.empty() || p.count(option) > 0)
            s.coordinatorArgs.insert(s.coordinatorArgs.end(), {option, value});
    s.nodeArgs = {"--max-cores", std::to_string(cores), "--cpu-percent", std::to_string(cpuPercent)};
    if (memoryCapMiB > 0)
        s.nodeArgs.insert(s.nodeArgs.end(), {"--memory-cap", std::to_string(memoryCapMiB)});
    if (checkpointSeconds >= 0)
        s.nodeArgs.insert(s.nodeArgs.end(), {"--checkpoint-seconds", std::to_string(checkpointSeconds)});
    if (evalEvery >= 0)
        s.nodeArgs.insert(s.nodeArgs.end(), {"--eval-every", std::to_string(evalEvery)});
    s.nodeArgs.insert(s.nodeArgs.end(), {"--peer-compression", peerCompression, "--ring-compression", ringCompression});
    if (overlap)
        s.coordinatorArgs.push_back("--overlap-averaging");
    if (maxWindow >= 0)
        s.coordinatorArgs.insert(s.coordinatorArgs.end(), {"--max-window", std::to_string(maxWindow)});
    if (stragglers)
        s.coordinatorArgs.insert(s.coordinatorArgs.end(), {"--straggler-check", "5"});
    if (graceSeconds > 0)
        s.coordinatorArgs.insert(s.coordinatorArgs.end(), {"--rejoin-grace-ms", std::to_string(graceSeconds * 1000)});
    if (certificateSeconds > 0)
        s.coordinatorArgs.insert(s.coordinatorArgs.end(),
                                 {"--certificate-lifetime-s", std::to_string(certificateSeconds)});
    for (int i = 1; i <= std::min(withoutData, s.nodes); ++i) // after --dataset-dir: the last one counts
        s.nodeExtraArgs[i] = {"--dataset-dir", (std::filesystem::path(workDir) / "no-dataset").string()};
    if (poisoner > 0)
        s.nodeEnvironment[poisoner] = {"ROOKERY_TESTING_MISBEHAVE=" + misbehaviour};
    if (throughRelay) { // port 1 on loopback: nothing listens, the coordinator's check fails at once
        s.nodeArgs.insert(s.nodeArgs.end(), {"--public-address", "127.0.0.1:1"});
        s.coordinatorArgs.insert(s.coordinatorArgs.end(), {"--reachability-timeout", "3"});
    }

    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    std::map<std::string, std::string> finalAccuracy;
    const std::regex done(R"(^done: cluster (\d+) at step (\d+): test accuracy ([0-9.]+)%)");
    try {
        if (fresh)
            std::filesystem::remove_all(workDir);
        launcher::SwarmLauncher swarm(s, [&](const std::string &who, const std::string &line) {
            std::smatch m;
            if (std::regex_search(line, m, done))
                finalAccuracy.emplace("cluster " + m[1].str(), m[3].str() + "%"); // the first word stands
            if (quiet && line.rfind("step ", 0) == 0)
                return;
            if (!verbose && line.rfind("info ", 0) == 0)
                return; // the log's copy of what the programs print themselves
            std::printf("[%s] %s\n", who.c_str(), line.c_str());
        });
        std::printf("starting a coordinator and %d nodes in %s\n", s.nodes, workDir.c_str());
        swarm.start();
        std::printf("coordinator at %s\n", swarm.address().c_str());
        while (!g_stop.load() && swarm.poll(std::chrono::milliseconds(200))) { }
        if (g_stop.load())
            std::printf("stopping: each node checkpoints first\n");
        swarm.stop();
        const auto codes = swarm.nodeExitCodes();
        bool allDone = !g_stop.load();
        for (int c : codes)
            allDone = allDone && c == 0;
        for (const auto &[cluster, acc] : finalAccuracy)
            std::printf("final test accuracy, %s: %s\n", cluster.c_str(), acc.c_str());
        std::printf(allDone ? "the run is complete\n" : "stopped; run the same command to resume\n");
        return allDone || g_stop.load() ? 0 : 1;
    } catch (const Error &e) {
        std::fprintf(stderr, "rookery-local-swarm: error: %s\n", e.what());
        return 1;
    }
}
