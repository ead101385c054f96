// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/coordinator/coordinator_cli.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/command_line.h"
#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/coord/job_file.h"
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
    int64_t certificateLifetime = 0; ///< seconds
    int64_t stormHoldMax = 0;
    int64_t heartbeatBudget = 0; ///< heartbeats a second
};

void declareTimingOptions(CLI::App &p, Timing &t)
{
    cli::addWholeNumber(p, "--heartbeat-ms", t.heartbeat, 50, 60'000, "MS", "how often nodes send heartbeats");
    cli::addWholeNumber(p, "--heartbeat-budget", t.heartbeatBudget, 0, 1'000'000, "N",
                        "heartbeats a second this coordinator takes from all nodes together: a larger swarm "
                        "is told a longer interval than --heartbeat-ms (0: --heartbeat-ms at any size)");
    cli::addWholeNumber(p, "--heartbeat-timeout-ms", t.timeout, 100, 600'000, "MS", "a node silent this long is lost");
    cli::addWholeNumber(p, "--rejoin-grace-ms", t.rejoinGrace, 0, 3'600'000, "MS",
                        "a node away (silent, or paused by its volunteer) keeps its assignment this long");
    cli::addWholeNumber(p, "--restart-grace-ms", t.restartGrace, 0, 3'600'000, "MS",
                        "the same, for every node after this coordinator restarts");
    cli::addWholeNumber(p, "--first-plan-delay-ms", t.firstPlanDelay, 0, 600'000, "MS",
                        "wait this long for more volunteers before the first plan");
    cli::addWholeNumber(p, "--storm-hold-max-ms", t.stormHoldMax, 0, 3'600'000, "MS",
                        "during a registration storm, tell placed nodes of the swarm's growth (ring sizes, "
                        "shards) at most this late; 0: at every planning round");
    cli::addWholeNumber(p, "--certificate-lifetime-s", t.certificateLifetime, 5, 365 * 86400, "S",
                        "how long a node's certificate is valid (default 30 days); nodes renew at half of it");
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

// The value of --job in `args` ("--job FILE" or "--job=FILE"), "" when absent: read
// before the other options, which then override what the job file sets.
std::string jobPathIn(const std::vector<char *> &args)
{
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "--job" && i + 1 < args.size())
            return args[i + 1];
        if (a.rfind("--job=", 0) == 0)
            return std::string(a.substr(6));
    }
    return {};
}

CLI::Option *declareRunOptions(CLI::App &p, coord::RunConfig &run, RunChoices &c)
{
    auto *model = cli::addChoice(p, "--model", c.model, model::modelNames(), "model to train (the model zoo)");
    cli::addChoice(p, "--optimizer", c.optimizer, {"sgd", "adamw"}, "optimizer");
    cli::addNumber(p, "--lr", c.learningRate, 1e-6, 10, "RATE", "learning rate");
    cli::addNumber(p, "--momentum", c.momentum, 0, 0.999, "M", "SGD momentum");
    cli::addNumber(p, "--weight-decay", c.weightDecay, 0, 0.5, "W", "weight decay");
    cli::addWholeNumber(p, "--microbatch", run.microbatch, 1, 60000, "N", "samples per microbatch");
    cli::addWholeNumber(p, "--accumulation", run.accumulation, 1, 4096, "N", "microbatches per optimizer step");
    cli::addWholeNumber(p, "--max-window", run.maxWindow, 0, coord::kMaxWindowLimit, "N",
                        "the most microbatches a pipeline's first stage keeps in flight to hide the network's round "
                        "trip, which is also the staleness cap (0: the nodes' default, 5)");
    cli::addWholeNumber(p, "--averaging-interval", run.averagingInterval, 1, 1000000, "N",
                        "optimizer steps between ring averagings");
    cli::addNumber(p, "--outer-lr", run.outerLearningRate, 1e-3, 2, "RATE",
                   "the outer learning rate applied after each averaging round (DiLoCo; 1 with --outer-momentum 0 "
                   "is plain averaging)");
    cli::addNumber(p, "--outer-momentum", run.outerMomentum, 0, 0.99, "M",
                   "the outer step's Nesterov momentum (DiLoCo uses 0.9 with --outer-lr 0.7)");
    p.add_flag("--overlap-averaging", run.overlapAveraging,
               "run each averaging round beside training, on a snapshot of the weights, and add its change when it "
               "is done (faster over slow links; the change arrives a few steps late)");
    cli::addWholeNumber(p, "--steps", run.totalSteps, 1, int64_t(1) << 40, "N", "optimizer steps to train in total");
    cli::addWholeNumber(p, "--seed", run.seed, 0, INT64_MAX, "N", "random seed of the run and the planner");
    return model;
}

std::chrono::milliseconds ms(int64_t v) { return std::chrono::milliseconds(v); }

} // namespace

bool parseCoordinatorOptions(int argc, char **argv, CoordinatorOptions &o)
{
    auto &s = o.settings;
    auto &run = s.run;
    std::string dataDir = (defaultDataDir() / "coordinator").string();
    Timing timing{s.heartbeatInterval.count(), s.heartbeatTimeout.count(), s.rejoinGrace.count(),
                  s.restartGrace.count(),      s.firstPlanDelay.count(),   s.certificateLifetime.count(),
                  s.stormHoldMax.count(),      int64_t(s.heartbeatBudget)};
    RunChoices choices{"mlp", "sgd", run.optimizer.learningRate, run.optimizer.momentum, run.optimizer.weightDecay};
    std::vector<char *> args(argv, argv + argc);
    if (args.size() > 1 && std::string_view(args[1]) == "invite") {
        o.invite = true; // the options that matter: --data-dir, --public-host and the invite's
        args.erase(args.begin() + 1);
    }
    if (args.size() > 1 && std::string_view(args[1]) == "dataset") {
        o.datasetCommand.assign(args.begin(), args.end());
        o.datasetCommand.erase(o.datasetCommand.begin() + 1);
        return true;
    }
    if (args.size() > 1 && std::string_view(args[1]) == "dataset-hash") {
        if (args.size() != 3)
            throw Error("usage: rookery-coordinator dataset-hash DIR (a directory with the dataset's four "
                        "IDX .gz files)");
        o.datasetHashDir = args[2];
        return true;
    }
    std::string jobPath = jobPathIn(args);
    std::optional<coord::Job> job;
    if (!jobPath.empty()) {
        job = coord::readJobFile(jobPath); // every problem of the file at once, before anything starts
        run = job->run;
        choices = {job->run.model.name, train::optimizerKindName(job->run.optimizer.kind),
                   job->run.optimizer.learningRate, job->run.optimizer.momentum, job->run.optimizer.weightDecay};
    }

    CLI::App p("Where a Rookery swarm meets: registers volunteers, signs their certificates, forms\n"
               "clusters, assigns pipeline stages, data shards and averaging rings, and re-plans as\n"
               "nodes come and go. Prints its address (with the fingerprint of its key) on start;\n"
               "give that address to the nodes.",
               "rookery-coordinator");
    cli::configure(p);
    p.add_option("--data-dir", dataDir, "where the swarm CA, keys and database live")->type_name("DIR");
    p.add_option("--swarm", s.swarmName, "the swarm's name (its CA's name)")->type_name("NAME");
    p.add_option("--bind", s.bindAddress, "listen on this address only (default: every interface, IPv4 and IPv6)")
        ->type_name("ADDRESS");
    p.add_option("--public-host", s.publicHost,
                 "host name in the printed address (default: --bind, or this machine's name)")
        ->type_name("HOST");
    cli::addWholeNumber(p, "--port", s.port, 0, 65535, "N", "port for node links (TLS WebSocket; 0: any)");
    cli::addWholeNumber(
        p, "--status-port", s.statusPort, 0, 65535, "N",
        "port for the HTTPS status API (0: any); anyone gets its public view, the operator token in the data "
        "directory (operator-token) the full one");
    cli::addWholeNumber(p, "--relay-port", s.relayPort, 0, 65535, "N",
                        "port of the relay for volunteers that cannot be dialled (0: any)");
    bool noRelay = false;
    p.add_flag("--no-relay", noRelay,
               "run no relay of its own: volunteers behind NAT on both ends of a link link only through a volunteer's "
               "relay (rookery-node --serve-relay)");
    cli::addWholeNumber(p, "--relay-pairs-per-node", s.relayPairsPerNode, 1, 1024, "N",
                        "relayed links one volunteer may hold at once");
    double relayMbit = 0;
    cli::addNumber(p, "--relay-mbit", relayMbit, 0, 100'000, "MBIT",
                   "cap each relayed link to this many Mbit/s each way (0: no cap)");
    bool open = false;
    p.add_flag("--open", open,
               "admit anyone who can reach this coordinator, without an invite (a warning is logged; default: "
               "invite-only, see 'invite' below)");
    cli::addWholeNumber(p, "--max-nodes-per-address", s.addressLimits.maxNodesPerAddress, 0, 1'000'000, "N",
                        "nodes registered at once from one IP address (0: no cap)");
    cli::addNumber(p, "--registrations-per-minute", s.addressLimits.registrationsPerMinute, 0, 1e6, "N",
                   "registrations accepted per minute from one IP address, after a burst (0: no cap)");
    cli::addWholeNumber(p, "--max-links-per-address", s.maxLinksPerAddress, 0, 1'000'000, "N",
                        "connections at once from one IP address, registered or not (0: no cap)");
    cli::addWholeNumber(p, "--quarantine-after", s.quarantineAfter, 0, 1'000'000, "N",
                        "quarantine a node (re-plan without it, ban its key for the run) once a peer has refused N of "
                        "its values as poisoned, or two peers any (0: never)");
    auto *inviteGroup = p.add_option_group("invite", "With 'invite': the new join token");
    cli::addWholeNumber(*inviteGroup, "--uses", o.inviteUses, 1, 1'000'000, "N", "new volunteers it admits");
    cli::addWholeNumber(*inviteGroup, "--valid-days", o.inviteDays, 1, 3650, "D", "days until it expires");
    inviteGroup->add_option("--note", o.inviteNote, "a note for the list (who it was for)")->type_name("TEXT");
    inviteGroup->add_flag("--list", o.inviteList, "list the invites (uses left, expiry) instead of making one");
    std::string fashionMnistDir = defaultFashionMnistDir().string();
    p.add_option("--dataset-dir", fashionMnistDir,
                 "the copy of Fashion-MNIST to serve to volunteers without one (when the run trains on it)")
        ->type_name("DIR");
    p.add_option("--job", jobPath,
                 "the job to train, from a JSON file (docs/job-file.md): model, optimizer, batch, steps, seed, "
                 "averaging and dataset; run options given as well override it")
        ->type_name("FILE");
    auto *modelOption = declareRunOptions(p, run, choices);
    declareTimingOptions(p, timing);
    cli::addWholeNumber(p, "--expect-nodes", s.expectNodes, 0, 1'000'000, "N",
                        "plan as soon as N volunteers have registered (0: wait --first-plan-delay-ms)");
    cli::addWholeNumber(p, "--cluster-size", s.clusterSize, 0, 64, "N",
                        "volunteers (pipeline stages) per cluster; 0: the planner decides");
    cli::addWholeNumber(p, "--max-nodes", s.maxNodes, 1, 1'000'000, "N", "most node links at once");
    cli::addWholeNumber(p, "--io-threads", s.ioThreads, 1, 64, "N", "network threads");
    int64_t reachabilitySeconds = s.reachabilityTimeout.count() / 1000;
    cli::addWholeNumber(p, "--reachability-timeout", reachabilitySeconds, 0, 600, "S",
                        "dial each volunteer back for up to S seconds to learn whether peers can reach it (0: "
                        "never)");
    int64_t stragglerSeconds = s.stragglerCheckInterval.count() / 1000;
    cli::addWholeNumber(p, "--straggler-check", stragglerSeconds, 0, 3600, "S",
                        "every S seconds, re-cut a cluster around a stage 1.5x slower than the others holding "
                        "its layers (0: never, the default; experimental)");
    int64_t claimSeconds = s.claimCheckInterval.count() / 1000;
    cli::addWholeNumber(p, "--claim-check", claimSeconds, 0, 3600, "S",
                        "every S seconds, compare each training stage's speed with what its volunteer's claimed "
                        "compute predicts; one 1,000x slower, three checks running, is quarantined (0: never)");
    p.add_flag("--quiet", o.quiet, "log warnings and errors only");
    p.footer("Examples:\n"
             "  rookery-coordinator                                 MLP, SGD, ports 7400 and 7401\n"
             "  rookery-coordinator --model cnn --optimizer adamw --lr 0.001 --steps 20000\n"
             "  rookery-coordinator --job jobs/mlp.json        the job in a file (docs/job-file.md)\n"
             "  rookery-coordinator dataset-hash DIR           the content hash of a dataset, for a job file\n"
             "  rookery-coordinator dataset add NAME --idx-dir DIR   add a dataset to serve (IDX files)\n"
             "  rookery-coordinator dataset list               the datasets this coordinator can serve\n"
             "  rookery-coordinator --bind 127.0.0.1 --port 0 --status-port 0   (a local test swarm)\n"
             "  rookery-coordinator invite --data-dir DIR [--uses N] [--valid-days D] [--public-host HOST]\n"
             "      make a join token for N new volunteers (default 1, for 7 days) and print the join\n"
             "      string that carries it, for volunteers to paste; --list shows the invites\n"
             "  rookery-coordinator --open --bind 127.0.0.1   a swarm without invites (a local test)\n\n"
             "Admission is by invite unless --open: a volunteer whose key the coordinator does not\n"
             "know needs a join string from 'invite'. One that registered once needs none again.\n"
             "Restarting with the same run settings resumes the run: nodes reconnect and keep\n"
             "their assignments. Ctrl-C or SIGTERM stops it cleanly.\n"
             "Exit status: 0 stopped, 1 error, 2 bad command line.");
    if (cli::parse(p, int(args.size()), args.data()) != cli::Outcome::Run)
        return false;
    s.dataDir = dataDir;
    o.fashionMnistDir = fashionMnistDir;
    s.admission = open ? coord::Admission::Open : coord::Admission::InviteOnly;
    s.reachabilityTimeout = std::chrono::seconds(reachabilitySeconds);
    s.stragglerCheckInterval = std::chrono::seconds(stragglerSeconds);
    s.claimCheckInterval = std::chrono::seconds(claimSeconds);
    s.relay = !noRelay;
    s.relayBytesPerSecondPerPair = uint64_t(relayMbit * 1e6 / 8);
    s.heartbeatInterval = ms(timing.heartbeat);
    s.heartbeatTimeout = ms(timing.timeout);
    s.heartbeatBudget = double(timing.heartbeatBudget);
    s.rejoinGrace = ms(timing.rejoinGrace);
    s.restartGrace = ms(timing.restartGrace);
    s.firstPlanDelay = ms(timing.firstPlanDelay);
    s.stormHoldMax = ms(timing.stormHoldMax);
    s.certificateLifetime = std::chrono::seconds(timing.certificateLifetime);
    if (s.heartbeatTimeout <= s.heartbeatInterval)
        throw Error("--heartbeat-timeout-ms must be longer than --heartbeat-ms");
    if (!job || modelOption->count() > 0)
        run.model = model::modelByName(choices.model);
    if (job) {
        o.jobName = s.jobName = job->name;
        o.jobNotes.push_back("job '" + job->name + "' from " + jobPath + ": model " + run.model.name + ", " +
                             std::to_string(run.model.layers.size()) + " layers, " +
                             std::to_string(model::parameterCount(run.model)) + " parameters");
        o.jobSha256 = job->datasetSha256; // checked at start (coord::settleServedDataset)
    }
    run.optimizer.kind = train::optimizerKindFromName(choices.optimizer);
    run.optimizer.learningRate = choices.learningRate;
    run.optimizer.momentum = choices.optimizer == "sgd" ? choices.momentum : 0.9;
    run.optimizer.weightDecay = choices.weightDecay;
    coord::validate(run);
    return true;
}

} // namespace rookery::app
