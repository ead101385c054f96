// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/node/node_cli.h"

#include "engine/common/arg_parser.h"
#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/device/schedule.h"
#include "engine/model/model_zoo.h"

namespace rookery::app {

bool parseNodeOptions(int argc, char **argv, NodeOptions &o)
{
    auto &l = o.local;
    o.dataDir = defaultDataDir().string();
    o.datasetDir = defaultFashionMnistDir().string();

    ArgParser p("rookery-node",
                "Rookery's headless node. With --join it joins a swarm: registers with the coordinator, trains\n"
                "the pipeline stage it is assigned, and averages with its peers. With no mode given, it trains a\n"
                "model on this machine (local mode). Either way it checkpoints to SQLite and resumes after a\n"
                "restart.");
    p.option("join", "ADDRESS", "join the swarm whose coordinator is at wss://host:port/#sha256=...", &o.join);
    p.option("name", "NAME", "swarm: this node's name, as others see it (default: the host name)", &o.name);
    p.option("bind", "HOST", "swarm: the IPv4 address peers reach this node at", &o.bind);
    p.option("port", "N", "swarm: the port peers reach this node at (0: any free port)", &o.port, 0, 65535);
    p.flag("stay", "swarm: stay in the swarm after the run is complete", &o.stay);
    p.option("status-port", "N", "swarm: the coordinator's status API, for the peer graph (0: its port + 1)",
             &o.statusPort, 0, 65535);
    p.option("data-dir", "DIR", "where the database and identity live", &o.dataDir);
    p.option("control-port", "N", "the control API's port on 127.0.0.1 (0: any free; see DIR/control-port)",
             &o.controlPort, 0, 65535);
    p.flag("no-control", "serve no local control API (and no metrics)", &o.noControl);
    p.option("dataset-dir", "DIR", "Fashion-MNIST's .gz files", &o.datasetDir);
    p.option("run", "NAME", "name under which checkpoints are kept and resumed", &l.run);
    p.choice("model", "model to train", &l.model, model::modelNames());
    p.choice("optimizer", "optimizer", &l.optimizer, {"sgd", "adamw"});
    p.option("lr", "RATE", "learning rate", &l.learningRate, 1e-6, 10);
    p.option("momentum", "M", "SGD momentum", &l.momentum, 0, 0.999);
    p.option("weight-decay", "W", "weight decay", &l.weightDecay, 0, 0.5);
    p.option("batch-size", "N", "samples per step", &l.batchSize, 1, 60000);
    p.option("steps", "N", "train until this many steps in total", &l.steps, 1, int64_t(1) << 40);
    p.option("checkpoint-every", "N", "checkpoint every N steps (0: only at the end)", &l.checkpointEvery, 0,
             int64_t(1) << 40);
    p.option("keep", "N", "checkpoints to keep", &l.keepCheckpoints, 1, 1000);
    p.option("eval-every", "N", "evaluate on the test set every N steps (0: only at the end)", &l.evalEvery, 0,
             int64_t(1) << 40);
    p.option("threads", "N", "cores to use for the math (0: all)", &l.threads, 0, 1024);
    p.option("train-samples", "N", "train on the first N samples only (0: all)", &l.trainSamples, 0, 60000);
    int64_t seed = int64_t(l.seed);
    p.option("seed", "N", "random seed for initialisation and data order", &seed, 0, INT64_MAX);
    p.flag("fresh", "start from scratch instead of resuming this run's newest checkpoint", &l.fresh);
    p.flag("quiet", "print only errors and the final result", &o.quiet);
    p.flag("profile", "print this machine's capability profile (cached up to 30 days) and exit", &o.profile);
    p.flag("json", "with --profile: print it as JSON", &o.json);
    p.flag("remeasure", "with --profile: measure again instead of using the cache", &o.remeasure);
    auto &g = l.governor;
    int64_t maxCores = 0, cpuPercent = 100, idleCpuPercent = 100;
    bool onBattery = false;
    p.option("max-cores", "N", "governor: use at most N cores (0: all)", &maxCores, 0, 4096);
    p.option("cpu-percent", "P", "governor: use at most P% of CPU time on those cores", &cpuPercent, 1, 100);
    p.option("idle-cpu-percent", "P", "governor: CPU time cap while the user is idle (default: --cpu-percent)",
             &idleCpuPercent, 1, 100);
    p.option("memory-cap", "MIB", "governor: checkpoint and stop past this resident memory (0: none)", &g.memoryCapMiB,
             0, int64_t(1) << 30);
    p.flag("idle-only", "governor: train only while the user is idle", &g.runOnlyWhenIdle);
    p.option("idle-minutes", "N", "governor: minutes without input before the user counts as idle", &g.idleMinutes, 1,
             24 * 60);
    p.option("schedule", "TEXT", "governor: weekly schedule, e.g. 'mon-fri 18:00-08:00, sat-sun all day'", &g.schedule);
    p.flag("run-on-battery", "governor: keep training on battery power", &onBattery);
    p.epilog("Examples:\n"
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
    if (p.parse(argc, argv) != ArgParser::Outcome::Run)
        return false;
    l.seed = uint64_t(seed);
    g.whenActive.maxCores = g.whenIdle.maxCores = maxCores;
    g.whenActive.cpuPercent = cpuPercent;
    g.whenIdle.cpuPercent = p.given("idle-cpu-percent") ? idleCpuPercent : cpuPercent;
    g.pauseOnBattery = !onBattery;
    try {
        device::Schedule::parse(g.schedule);
    } catch (const Error &e) {
        throw Error(std::string("--schedule: ") + e.what());
    }
    if ((o.json || o.remeasure) && !o.profile)
        throw Error("--json and --remeasure go with --profile");
    if (o.profile && (p.given("control-port") || o.noControl))
        throw Error("--control-port and --no-control do not go with --profile");
    if (o.noControl && p.given("control-port"))
        throw Error("--control-port and --no-control do not go together");
    if (!o.join.empty() && o.profile)
        throw Error("--profile and --join do not go together");
    if (o.join.empty())
        for (const char *swarmOnly : {"name", "bind", "port", "stay", "status-port"})
            if (p.given(swarmOnly))
                throw Error(std::string("--") + swarmOnly + " goes with --join");
    if (!o.join.empty()) {
        // A swarm node has its own defaults (SwarmNodeSettings): -1 keeps them.
        if (!p.given("checkpoint-every"))
            l.checkpointEvery = -1;
        if (!p.given("eval-every"))
            l.evalEvery = -1;
    }
    l.dataDir = o.dataDir;
    l.datasetDir = o.datasetDir;
    return true;
}

} // namespace rookery::app
