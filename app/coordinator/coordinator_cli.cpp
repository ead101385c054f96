// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/coordinator/coordinator_cli.h"

#include <cstdint>
#include <string>

#include "engine/common/arg_parser.h"
#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/model/model_zoo.h"

namespace rookery::app {
namespace {

std::chrono::milliseconds ms(int64_t v) { return std::chrono::milliseconds(v); }

} // namespace

bool parseCoordinatorOptions(int argc, char **argv, CoordinatorOptions &o)
{
    auto &s = o.settings;
    auto &run = s.run;
    std::string dataDir = (defaultDataDir() / "coordinator").string();
    std::string modelName = "mlp", optimizer = "sgd";
    int64_t port = s.port, statusPort = s.statusPort, seed = int64_t(run.seed), maxNodes = int64_t(s.maxNodes);
    int64_t heartbeat = s.heartbeatInterval.count(), timeout = s.heartbeatTimeout.count(),
            grace = s.rejoinGrace.count(), restartGrace = s.restartGrace.count(),
            firstPlanDelay = s.firstPlanDelay.count();
    double lr = run.optimizer.learningRate, momentum = run.optimizer.momentum, weightDecay = run.optimizer.weightDecay;

    ArgParser p("rookery-coordinator",
                "Where a Rookery swarm meets: registers volunteers, signs their certificates, forms\n"
                "clusters, assigns pipeline stages, data shards and averaging rings, and re-plans as\n"
                "nodes come and go. Prints its address (with its certificate's fingerprint) on start;\n"
                "give that address to the nodes.");
    p.option("data-dir", "DIR", "where the swarm CA, keys and database live", &dataDir);
    p.option("swarm", "NAME", "the swarm's name (its CA's name)", &s.swarmName);
    p.option("bind", "ADDRESS", "address to listen on", &s.bindAddress);
    p.option("public-host", "HOST", "host name in the printed address (default: --bind, or this machine's name)",
             &s.publicHost);
    p.option("port", "N", "port for node links (TLS WebSocket; 0: any)", &port, 0, 65535);
    p.option("status-port", "N", "port for the HTTPS status API (0: any)", &statusPort, 0, 65535);
    p.choice("model", "model to train (the model zoo)", &modelName, model::modelNames());
    p.choice("optimizer", "optimizer", &optimizer, {"sgd", "adamw"});
    p.option("lr", "RATE", "learning rate", &lr, 1e-6, 10);
    p.option("momentum", "M", "SGD momentum", &momentum, 0, 0.999);
    p.option("weight-decay", "W", "weight decay", &weightDecay, 0, 0.5);
    p.option("microbatch", "N", "samples per microbatch", &run.microbatch, 1, 60000);
    p.option("accumulation", "N", "microbatches per optimizer step", &run.accumulation, 1, 4096);
    p.option("averaging-interval", "N", "optimizer steps between ring averagings", &run.averagingInterval, 1, 1000000);
    p.option("steps", "N", "optimizer steps to train in total", &run.totalSteps, 1, int64_t(1) << 40);
    p.option("seed", "N", "random seed of the run and the planner", &seed, 0, INT64_MAX);
    p.option("heartbeat-ms", "MS", "how often nodes send heartbeats", &heartbeat, 50, 60'000);
    p.option("heartbeat-timeout-ms", "MS", "a node silent this long is lost", &timeout, 100, 600'000);
    p.option("rejoin-grace-ms", "MS", "a lost node keeps its assignment this long", &grace, 0, 3'600'000);
    p.option("restart-grace-ms", "MS", "the same, for every node after this coordinator restarts", &restartGrace, 0,
             3'600'000);
    p.option("first-plan-delay-ms", "MS", "wait this long for more volunteers before the first plan", &firstPlanDelay,
             0, 600'000);
    p.option("expect-nodes", "N", "plan as soon as N volunteers have registered (0: wait --first-plan-delay-ms)",
             &s.expectNodes, 0, 1'000'000);
    p.option("cluster-size", "N", "volunteers (pipeline stages) per cluster; 0: the planner decides", &s.clusterSize, 0,
             64);
    p.option("max-nodes", "N", "most node links at once", &maxNodes, 1, 1'000'000);
    p.option("io-threads", "N", "network threads", &s.ioThreads, 1, 64);
    p.flag("quiet", "log warnings and errors only", &o.quiet);
    p.epilog("Examples:\n"
             "  rookery-coordinator                                 MLP, SGD, ports 7400 and 7401\n"
             "  rookery-coordinator --model cnn --optimizer adamw --lr 0.001 --steps 20000\n"
             "  rookery-coordinator --bind 127.0.0.1 --port 0 --status-port 0   (a local test swarm)\n\n"
             "Restarting with the same run settings resumes the run: nodes reconnect and keep\n"
             "their assignments. Ctrl-C or SIGTERM stops it cleanly.\n"
             "Exit status: 0 stopped, 1 error, 2 bad command line.");
    if (p.parse(argc, argv) != ArgParser::Outcome::Run)
        return false;
    s.dataDir = dataDir;
    s.port = uint16_t(port);
    s.statusPort = uint16_t(statusPort);
    s.maxNodes = size_t(maxNodes);
    s.heartbeatInterval = ms(heartbeat);
    s.heartbeatTimeout = ms(timeout);
    s.rejoinGrace = ms(grace);
    s.restartGrace = ms(restartGrace);
    s.firstPlanDelay = ms(firstPlanDelay);
    if (s.heartbeatTimeout <= s.heartbeatInterval)
        throw Error("--heartbeat-timeout-ms must be longer than --heartbeat-ms");
    run.model = model::modelByName(modelName);
    run.optimizer.kind = train::optimizerKindFromName(optimizer);
    run.optimizer.learningRate = lr;
    run.optimizer.momentum = optimizer == "sgd" ? momentum : 0.9;
    run.optimizer.weightDecay = weightDecay;
    run.seed = uint64_t(seed);
    coord::validate(run);
    return true;
}

} // namespace rookery::app
