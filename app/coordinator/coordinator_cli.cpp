// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/coordinator/coordinator_cli.h"

#include <cstdint>
#include <string>

#include "engine/common/command_line.h"
#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/model/model_zoo.h"

namespace rookery::app {
namespace {

// The waits, in whole milliseconds on the command line.
struct Timing
{
    int64_t heartbeat = 0;
    int64_t timeout = 0;
    int64_t rejoinGrace = 0;
    int64_t restartGrace = 0;
    int64_t firstPlanDelay = 0;
};

void declareTimingOptions(CLI::App &p, Timing &t)
{
    p.add_option("--heartbeat-ms", t.heartbeat, "how often nodes send heartbeats")
        ->type_name("MS")
        ->check(cli::wholeNumber(50, 60'000));
    p.add_option("--heartbeat-timeout-ms", t.timeout, "a node silent this long is lost")
        ->type_name("MS")
        ->check(cli::wholeNumber(100, 600'000));
    p.add_option("--rejoin-grace-ms", t.rejoinGrace, "a lost node keeps its assignment this long")
        ->type_name("MS")
        ->check(cli::wholeNumber(0, 3'600'000));
    p.add_option("--restart-grace-ms", t.restartGrace, "the same, for every node after this coordinator restarts")
        ->type_name("MS")
        ->check(cli::wholeNumber(0, 3'600'000));
    p.add_option("--first-plan-delay-ms", t.firstPlanDelay, "wait this long for more volunteers before the first plan")
        ->type_name("MS")
        ->check(cli::wholeNumber(0, 600'000));
}

// What the run options name and parseCoordinatorOptions() turns into RunConfig fields
// afterwards: a model and optimizer by name, and momentum for SGD only.
struct RunChoices
{
    std::string model = "mlp";
    std::string optimizer = "sgd";
    double learningRate = 0;
    double momentum = 0;
    double weightDecay = 0;
};

void declareRunOptions(CLI::App &p, coord::RunConfig &run, RunChoices &c)
{
    cli::addChoice(p, "--model", c.model, model::modelNames(), "model to train (the model zoo)");
    cli::addChoice(p, "--optimizer", c.optimizer, {"sgd", "adamw"}, "optimizer");
    p.add_option("--lr", c.learningRate, "learning rate")->type_name("RATE")->check(cli::number(1e-6, 10));
    p.add_option("--momentum", c.momentum, "SGD momentum")->type_name("M")->check(cli::number(0, 0.999));
    p.add_option("--weight-decay", c.weightDecay, "weight decay")->type_name("W")->check(cli::number(0, 0.5));
    p.add_option("--microbatch", run.microbatch, "samples per microbatch")
        ->type_name("N")
        ->check(cli::wholeNumber(1, 60000));
    p.add_option("--accumulation", run.accumulation, "microbatches per optimizer step")
        ->type_name("N")
        ->check(cli::wholeNumber(1, 4096));
    p.add_option("--averaging-interval", run.averagingInterval, "optimizer steps between ring averagings")
        ->type_name("N")
        ->check(cli::wholeNumber(1, 1000000));
    p.add_option("--steps", run.totalSteps, "optimizer steps to train in total")
        ->type_name("N")
        ->check(cli::wholeNumber(1, int64_t(1) << 40));
    p.add_option("--seed", run.seed, "random seed of the run and the planner")
        ->type_name("N")
        ->check(cli::wholeNumber(0, INT64_MAX));
}

std::chrono::milliseconds ms(int64_t v) { return std::chrono::milliseconds(v); }

} // namespace

bool parseCoordinatorOptions(int argc, char **argv, CoordinatorOptions &o)
{
    auto &s = o.settings;
    auto &run = s.run;
    std::string dataDir = (defaultDataDir() / "coordinator").string();
    Timing timing{s.heartbeatInterval.count(), s.heartbeatTimeout.count(), s.rejoinGrace.count(),
                  s.restartGrace.count(), s.firstPlanDelay.count()};
    RunChoices choices{"mlp", "sgd", run.optimizer.learningRate, run.optimizer.momentum, run.optimizer.weightDecay};

    CLI::App p("Where a Rookery swarm meets: registers volunteers, signs their certificates, forms\n"
               "clusters, assigns pipeline stages, data shards and averaging rings, and re-plans as\n"
               "nodes come and go. Prints its address (with its certificate's fingerprint) on start;\n"
               "give that address to the nodes.",
               "rookery-coordinator");
    cli::configure(p);
    p.add_option("--data-dir", dataDir, "where the swarm CA, keys and database live")->type_name("DIR");
    p.add_option("--swarm", s.swarmName, "the swarm's name (its CA's name)")->type_name("NAME");
    p.add_option("--bind", s.bindAddress, "address to listen on")->type_name("ADDRESS");
    p.add_option("--public-host", s.publicHost,
                 "host name in the printed address (default: --bind, or this machine's name)")
        ->type_name("HOST");
    p.add_option("--port", s.port, "port for node links (TLS WebSocket; 0: any)")
        ->type_name("N")
        ->check(cli::wholeNumber(0, 65535));
    p.add_option("--status-port", s.statusPort, "port for the HTTPS status API (0: any)")
        ->type_name("N")
        ->check(cli::wholeNumber(0, 65535));
    declareRunOptions(p, run, choices);
    declareTimingOptions(p, timing);
    p.add_option("--expect-nodes", s.expectNodes,
                 "plan as soon as N volunteers have registered (0: wait --first-plan-delay-ms)")
        ->type_name("N")
        ->check(cli::wholeNumber(0, 1'000'000));
    p.add_option("--cluster-size", s.clusterSize, "volunteers (pipeline stages) per cluster; 0: the planner decides")
        ->type_name("N")
        ->check(cli::wholeNumber(0, 64));
    p.add_option("--max-nodes", s.maxNodes, "most node links at once")
        ->type_name("N")
        ->check(cli::wholeNumber(1, 1'000'000));
    p.add_option("--io-threads", s.ioThreads, "network threads")->type_name("N")->check(cli::wholeNumber(1, 64));
    p.add_flag("--quiet", o.quiet, "log warnings and errors only");
    p.footer("Examples:\n"
             "  rookery-coordinator                                 MLP, SGD, ports 7400 and 7401\n"
             "  rookery-coordinator --model cnn --optimizer adamw --lr 0.001 --steps 20000\n"
             "  rookery-coordinator --bind 127.0.0.1 --port 0 --status-port 0   (a local test swarm)\n\n"
             "Restarting with the same run settings resumes the run: nodes reconnect and keep\n"
             "their assignments. Ctrl-C or SIGTERM stops it cleanly.\n"
             "Exit status: 0 stopped, 1 error, 2 bad command line.");
    if (cli::parse(p, argc, argv) != cli::Outcome::Run)
        return false;
    s.dataDir = dataDir;
    s.heartbeatInterval = ms(timing.heartbeat);
    s.heartbeatTimeout = ms(timing.timeout);
    s.rejoinGrace = ms(timing.rejoinGrace);
    s.restartGrace = ms(timing.restartGrace);
    s.firstPlanDelay = ms(timing.firstPlanDelay);
    if (s.heartbeatTimeout <= s.heartbeatInterval)
        throw Error("--heartbeat-timeout-ms must be longer than --heartbeat-ms");
    run.model = model::modelByName(choices.model);
    run.optimizer.kind = train::optimizerKindFromName(choices.optimizer);
    run.optimizer.learningRate = choices.learningRate;
    run.optimizer.momentum = choices.optimizer == "sgd" ? choices.momentum : 0.9;
    run.optimizer.weightDecay = choices.weightDecay;
    coord::validate(run);
    return true;
}

} // namespace rookery::app
