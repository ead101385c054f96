// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/node/node_cli.h"

#include "engine/common/command_line.h"
#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/device/schedule.h"
#include "engine/model/model_zoo.h"

namespace rookery::app {
namespace {

constexpr int64_t kManySteps = int64_t(1) << 40;

// The governor's options that do not map one to one onto GovernorSettings.
struct GovernorOptions
{
    int64_t maxCores = 0;
    int64_t cpuPercent = 100;
    int64_t idleCpuPercent = 100;
    bool onBattery = false;
};

void declareSwarmOptions(CLI::App &p, NodeOptions &o)
{
    p.add_option("--join", o.join, "join the swarm whose coordinator is at wss://host:port/#sha256=...")
        ->type_name("ADDRESS");
    p.add_option("--name", o.name, "swarm: this node's name, as others see it (default: a nickname made from its key)")
        ->type_name("NAME");
    p.add_option("--bind", o.bind, "swarm: listen for peers on this address only (default: every interface)")
        ->type_name("ADDRESS");
    p.add_option("--public-address", o.publicAddress,
                 "swarm: the address peers reach this node at, when the coordinator cannot see it (a forwarded "
                 "port, a public IPv6 address); default: the address its connection comes from")
        ->type_name("HOST[:PORT]");
    p.add_flag("--no-port-mapping", o.noPortMapping,
               "swarm: do not ask the home router (UPnP IGD, NAT-PMP) to forward the peer port");
    cli::addWholeNumber(p, "--port", o.port, 0, 65535, "N",
                        "swarm: the port peers reach this node at (0: any free port)");
    cli::addWholeNumber(p, "--serve-relay", o.serveRelay, 1, 65535, "PORT",
                        "swarm: run a relay on this port for volunteers that cannot reach each other (opt in; the "
                        "coordinator uses it while peers can dial this node; they see only ciphertext)");
    cli::addNumber(p, "--relay-mbit", o.relayMbit, 0, 100000, "MBIT",
                   "swarm: with --serve-relay, cap each relayed pair to this many Mbit/s each way (0: no cap)");
    cli::addChoice(p, "--peer-compression", o.peerCompression, {"none", "fp16", "bf16"},
                   "swarm: how activations and gradients travel over the peer links this node dials: bf16 "
                   "(16-bit values, half the bytes, no accuracy lost in docs/benchmarks.md, bench_compression), "
                   "fp16, or none (float32)");
    cli::addChoice(p, "--ring-compression", o.ringCompression, {"none", "bf16", "int8", "int4"},
                   "swarm: how the ring chunks this node sends travel: int8 (the members' changes since the "
                   "ring's last round as 8-bit values with a scale per 64, about a quarter of the bytes; what "
                   "rounding leaves out is carried into the next round; docs/benchmarks.md, bench_wan), int4 (4-bit, "
                   "an eighth), bf16 (16-bit values, half the bytes) or none (float32)");
    p.add_flag("--stay", o.stay, "swarm: stay in the swarm after the run is complete");
    cli::addWholeNumber(p, "--checkpoint-seconds", o.checkpointSeconds, 0, 86400, "S",
                        "swarm: checkpoint at most every S seconds (and every --checkpoint-every steps); a crash "
                        "loses at most that much training (default 20; 0: every --checkpoint-every steps)")
        ->default_str("");
    cli::addWholeNumber(p, "--eval-samples", o.evalSamples, 0, 10000, "N",
                        "swarm: a root tests its pipeline on the first N test samples (0: all 10,000); for "
                        "models so large that testing on all of them takes minutes");
    cli::addWholeNumber(p, "--status-port", o.statusPort, 0, 65535, "N",
                        "swarm: the coordinator's status API, for the peer graph (0: its port + 1)");
    p.add_option("--data-dir", o.dataDir, "where the database and identity live")->type_name("DIR");
    cli::addWholeNumber(p, "--control-port", o.controlPort, 0, 65535, "N",
                        "the control API's port on 127.0.0.1 (0: any free; see DIR/control-port)");
    p.add_flag("--no-control", o.noControl, "serve no local control API (and no metrics)");
    p.add_option("--dataset-dir", o.datasetDir,
                 "Fashion-MNIST's .gz files; in a swarm, a root stage without them fetches the run's dataset from "
                 "the coordinator")
        ->type_name("DIR");
    cli::addWholeNumber(p, "--data-cache-mib", o.dataCacheMiB, 64, int64_t(1) << 30, "MIB",
                        "swarm: the most disk the dataset shards fetched from the coordinator may take (in "
                        "DIR/data-cache; the least recently used go first)");
}

void declareTrainingOptions(CLI::App &p, host::WholeModelSettings &l)
{
    p.add_option("--run", l.run, "name under which checkpoints are kept and resumed")->type_name("NAME");
    cli::addChoice(p, "--model", l.model, model::modelNames(), "model to train");
    cli::addChoice(p, "--optimizer", l.optimizer, {"sgd", "adamw"}, "optimizer");
    cli::addNumber(p, "--lr", l.learningRate, 1e-6, 10, "RATE", "learning rate");
    cli::addNumber(p, "--momentum", l.momentum, 0, 0.999, "M", "SGD momentum");
    cli::addNumber(p, "--weight-decay", l.weightDecay, 0, 0.5, "W", "weight decay");
    cli::addWholeNumber(p, "--batch-size", l.batchSize, 1, 60000, "N", "samples per step");
    cli::addWholeNumber(p, "--steps", l.steps, 1, kManySteps, "N", "train until this many steps in total");
    cli::addWholeNumber(p, "--checkpoint-every", l.checkpointEvery, 0, kManySteps, "N",
                        "checkpoint every N steps (0: only at the end)");
    cli::addWholeNumber(p, "--keep", l.keepCheckpoints, 1, 1000, "N", "checkpoints to keep");
    cli::addWholeNumber(p, "--eval-every", l.evalEvery, 0, kManySteps, "N",
                        "evaluate on the test set every N steps (0: only at the end)");
    cli::addWholeNumber(p, "--threads", l.threads, 0, 1024, "N", "cores to use for the math (0: all)");
    cli::addWholeNumber(p, "--train-samples", l.trainSamples, 0, 60000, "N",
                        "train on the first N samples only (0: all)");
    cli::addWholeNumber(p, "--seed", l.seed, 0, INT64_MAX, "N", "random seed for initialisation and data order");
    p.add_flag("--fresh", l.fresh, "start from scratch instead of resuming this run's newest checkpoint");
}

void declareGovernorOptions(CLI::App &p, device::GovernorSettings &g, GovernorOptions &go)
{
    cli::addWholeNumber(p, "--max-cores", go.maxCores, 0, 4096, "N", "governor: use at most N cores (0: all)");
    cli::addWholeNumber(p, "--cpu-percent", go.cpuPercent, 1, 100, "P",
                        "governor: use at most P% of CPU time on those cores");
    // Its default is another option's value, which the help says; no captured default.
    cli::addWholeNumber(p, "--idle-cpu-percent", go.idleCpuPercent, 1, 100, "P",
                        "governor: CPU time cap while the user is idle (default: --cpu-percent)")
        ->default_str("");
    cli::addWholeNumber(p, "--memory-cap", g.memoryCapMiB, 0, int64_t(1) << 30, "MIB",
                        "governor: checkpoint and stop past this resident memory (0: none)");
    p.add_flag("--idle-only", g.runOnlyWhenIdle, "governor: train only while the user is idle");
    cli::addWholeNumber(p, "--idle-minutes", g.idleMinutes, 1, 24 * 60, "N",
                        "governor: minutes without input before the user counts as idle");
    p.add_option("--schedule", g.schedule, "governor: weekly schedule, e.g. 'mon-fri 18:00-08:00, sat-sun all day'")
        ->type_name("TEXT");
    p.add_flag("--run-on-battery", go.onBattery, "governor: keep training on battery power");
}

// Rules between options, checked once all are read.
void checkCombinations(const CLI::App &p, const NodeOptions &o)
{
    if ((o.json || o.remeasure) && !o.profile)
        throw Error("--json and --remeasure go with --profile");
    if (o.profile && (p.count("--control-port") || o.noControl))
        throw Error("--control-port and --no-control do not go with --profile");
    if (o.noControl && p.count("--control-port"))
        throw Error("--control-port and --no-control do not go together");
    if (!o.join.empty() && o.profile)
        throw Error("--profile and --join do not go together");
    if (p.count("--relay-mbit") && !p.count("--serve-relay"))
        throw Error("--relay-mbit goes with --serve-relay");
    if (o.join.empty())
        for (const char *swarmOnly :
             {"--name", "--bind", "--public-address", "--no-port-mapping", "--port", "--serve-relay", "--relay-mbit",
              "--stay", "--status-port", "--checkpoint-seconds", "--peer-compression", "--ring-compression"})
            if (p.count(swarmOnly))
                throw Error(std::string(swarmOnly) + " goes with --join");
}

} // namespace

bool parseNodeOptions(int argc, char **argv, NodeOptions &o)
{
    auto &l = o.local;
    auto &g = l.governor;
    o.dataDir = defaultDataDir().string();
    o.datasetDir = defaultFashionMnistDir().string();

    CLI::App p("Rookery's headless node. With --join it joins a swarm: registers with the coordinator, trains\n"
               "the pipeline stage it is assigned, and averages with its peers. With no mode given, it trains a\n"
               "model on this machine (local mode). Either way it checkpoints to SQLite and resumes after a\n"
               "restart.",
               "rookery-node");
    cli::configure(p);
    GovernorOptions go;
    declareSwarmOptions(p, o);
    declareTrainingOptions(p, l);
    p.add_flag("--quiet", o.quiet, "print only errors and the final result");
    p.add_flag("--profile", o.profile, "print this machine's capability profile (cached up to 30 days) and exit");
    p.add_flag("--json", o.json, "with --profile: print it as JSON");
    p.add_flag("--remeasure", o.remeasure, "with --profile: measure again instead of using the cache");
    declareGovernorOptions(p, g, go);
    p.footer("Examples:\n"
             "  rookery-node                        train the MLP, resuming if it was interrupted\n"
             "  rookery-node --model cnn --steps 2000 --run cnn-demo\n"
             "  rookery-node --cpu-percent 50 --schedule 'mon-fri 18:00-08:00, sat-sun all day'\n"
             "  rookery-node --profile --json       this machine's measured capabilities\n"
             "  rookery-node --join 'wss://10.0.0.5:7400/#sha256=...'   join a swarm\n"
             "  rookery --attach ~/.local/share/rookery   watch and steer this node from the desktop app\n\n"
             "While it runs, the node serves a control API on 127.0.0.1 (status, pause, resume, settings,\n"
             "stop) to clients that present the token in DIR/control-token, and Prometheus metrics at\n"
             "/metrics to any local client. Ctrl-C or SIGTERM checkpoints and stops; running the same\n"
             "command again resumes.\n"
             "Exit status: 0 done or stopped, 1 error, 2 bad command line.");
    if (cli::parse(p, argc, argv) != cli::Outcome::Run)
        return false;
    g.whenActive.maxCores = g.whenIdle.maxCores = go.maxCores;
    g.whenActive.cpuPercent = go.cpuPercent;
    g.whenIdle.cpuPercent = p.count("--idle-cpu-percent") ? go.idleCpuPercent : go.cpuPercent;
    g.pauseOnBattery = !go.onBattery;
    try {
        device::Schedule::parse(g.schedule);
    } catch (const Error &e) {
        throw Error(std::string("--schedule: ") + e.what());
    }
    checkCombinations(p, o);
    if (!o.join.empty()) {
        // A swarm node has its own defaults (SwarmNodeSettings): -1 keeps them.
        if (!p.count("--checkpoint-every"))
            l.checkpointEvery = -1;
        if (!p.count("--eval-every"))
            l.evalEvery = -1;
    }
    l.dataDir = o.dataDir;
    l.datasetDir = o.datasetDir;
    return true;
}

} // namespace rookery::app
