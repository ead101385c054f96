// SPDX-License-Identifier: GPL-3.0-or-later
// bench_coordinator: rookery-coordinator in a child process, and N synthetic nodes (real
// CoordinatorClients over TLS; 1,000 by default, 200 with --quick, any number with
// --nodes N) that register and then send a heartbeat every second. The nodes run in as
// many client processes as it takes to hold 10,000 links (this program again, with
// --client), each with its own NetContext. Reports heartbeat round trips (p50, p99),
// registrations per second and their latency, lost registrations (must be 0), the
// assignment pushes each node received, the coordinator's CPU time and its memory per
// node beyond its empty baseline (from /proc), the clients' share of the cores, and the
// coordinator's restart time with every node known. The baseline is the same round trip
// with a single node. Also times the planner (genetic clustering + pipelines + rings)
// for 1,000 and 10,000 volunteers, and compares the plan the coordinator builds as they
// arrive with the one made for all of them at once: how many train, and the predicted
// samples/s.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/coordinator_planner.h"
#include "bench/coordinator_population.h"
#include "bench/support/bench_report.h"
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/coord/coordinator_client.h"
#include "engine/coord/heartbeat_pace.h"
#include "engine/coord/wire_convert.h"
#include "engine/device/capability_profile.h"
#include "engine/model/model_zoo.h"
#include "engine/net/wire_codec.h"
#include "engine/swarm/swarm_planner.h"

using namespace rookery;
using namespace rookery::bench;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

void raiseFileLimit()
{
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

std::string profileJson(const Volunteer &v)
{
    device::CapabilityProfile p;
    p.cpuModel = "Synthetic CPU";
    p.physicalCores = p.logicalCores = p.allowedCores = 4;
    p.ramTotalBytes = v.memory * 2;
    p.ramAvailableBytes = v.memory;
    p.gflopsOneThread = v.gflops / 4;
    p.gflopsAllThreads = v.gflops;
    p.memoryBandwidthBytesPerSecond = 10e9;
    p.dataDir = "/tmp";
    p.measuredAtMs = 1714000000000;
    return device::toJson(p);
}

// ---- The coordinator in a child process ------------------------------------------

struct Child
{
    pid_t pid = -1;
    FILE *out = nullptr;
    std::string address;
};

std::filesystem::path coordinatorBinary()
{
    if (const char *dir = std::getenv("ROOKERY_BIN_DIR"))
        return std::filesystem::path(dir) / "rookery-coordinator";
    return std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() / "app" / "rookery-coordinator";
}

Child startCoordinator(const std::filesystem::path &dataDir, int nodes, const std::vector<std::string> &extra,
                       bool quiet)
{
    const auto binary = coordinatorBinary();
    if (!std::filesystem::exists(binary))
        throw Error("cannot find " + binary.string() + ": build rookery-coordinator first");
    int pipefd[2];
    if (pipe(pipefd) != 0)
        throw Error("pipe failed");
    std::vector<std::string> args = {
        binary.string(), "--data-dir", dataDir.string(), "--bind", "127.0.0.1", "--port", "0", "--status-port", "0",
        "--relay-port", "0", "--heartbeat-ms", "1000", "--first-plan-delay-ms", "2000", "--max-nodes",
        std::to_string(nodes + 100), "--io-threads", "2",
        // Every synthetic node comes from 127.0.0.1.
        "--open", "--max-nodes-per-address", "0", "--max-links-per-address", "0", "--registrations-per-minute", "0"};
    if (quiet)
        args.push_back("--quiet");
    args.insert(args.end(), extra.begin(), extra.end());
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], STDOUT_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        std::vector<char *> argv;
        for (const auto &a : args)
            argv.push_back(const_cast<char *>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(pipefd[1]);
    Child c{pid, fdopen(pipefd[0], "r"), {}};
    char line[1024];
    while (fgets(line, sizeof line, c.out)) {
        std::string s(line);
        if (s.rfind("address: ", 0) == 0) {
            c.address = s.substr(9, s.find_last_not_of("\r\n") - 8);
            break;
        }
    }
    if (c.address.empty())
        throw Error("rookery-coordinator did not print its address");
    return c;
}

int stopCoordinator(Child &c)
{
    kill(c.pid, SIGTERM);
    int status = 0;
    waitpid(c.pid, &status, 0);
    if (c.out)
        fclose(c.out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct ProcUsage
{
    double cpuSeconds = 0;
    double rssMiB = 0;
    double peakRssMiB = 0;
};

ProcUsage procUsage(pid_t pid)
{
    ProcUsage u;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const auto close = text.rfind(')');
    if (close != std::string::npos) {
        std::istringstream rest(text.substr(close + 2));
        std::string field;
        unsigned long long utime = 0, stime = 0;
        for (int i = 3; i <= 15 && rest >> field; ++i) {
            if (i == 14)
                utime = std::stoull(field);
            if (i == 15)
                stime = std::stoull(field);
        }
        u.cpuSeconds = double(utime + stime) / double(sysconf(_SC_CLK_TCK));
    }
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    double kib;
    while (status >> key) {
        if (key == "VmRSS:" && status >> kib)
            u.rssMiB = kib / 1024;
        else if (key == "VmHWM:" && status >> kib)
            u.peakRssMiB = kib / 1024;
    }
    return u;
}

// ---- Synthetic nodes ---------------------------------------------------------------

// What a push changed for the node that received it, from the assignment it had before.
enum PushKind : int {
    kStillWaiting, // waiting before and after: a new reason, such as its reachability verdict
    kPlaced,       // waiting before, training after
    kMoved,        // training before and after, in another cluster, stage, layers or pipeline
    kReseated,     // the same stage: its rings, shard, cluster count or who dials whom changed
    kUnplaced,     // training before, waiting after
    kPushKinds
};
constexpr const char *kPushKindKeys[kPushKinds] = {"pushes_still_waiting", "pushes_placed", "pushes_moved",
                                                   "pushes_reseated", "pushes_unplaced"};

PushKind pushKind(const coord::Assignment &was, const coord::Assignment &now)
{
    if (!was.isTraining())
        return now.isTraining() ? kPlaced : kStillWaiting;
    if (!now.isTraining())
        return kUnplaced;
    const bool sameStage = was.cluster == now.cluster && was.stage == now.stage && was.stages == now.stages &&
                           was.firstLayer == now.firstLayer && was.lastLayer == now.lastLayer &&
                           was.previous.nodeId == now.previous.nodeId && was.next.nodeId == now.next.nodeId;
    return sameStage ? kReseated : kMoved;
}

struct Swarm
{
    std::mutex mutex;
    std::vector<double> registrationMs;
    std::vector<double> roundTripMs;
    std::atomic<int> registered{0}, registrations{0}, errors{0}, assignments{0};
    std::atomic<int> assignmentBytesMax{0}; // the largest assignment as it travels (an AssignmentUpdate frame)
    std::array<std::atomic<int>, kPushKinds> pushesByKind{}; // what each push changed (PushKind)
    std::atomic<bool> measuring{false};
    std::vector<std::unique_ptr<coord::CoordinatorClient>> clients;
};

// Starts `count` nodes, numbered from `first`, at about `perSecond` a second.
void startNodes(Swarm &swarm, net::NetContext &ctx, const net::CoordinatorAddress &address, int first, int count,
                uint64_t seed, double perSecond)
{
    const int64_t demand = swarm::demandOf({model::mlpSpec(), 64, 1}).memoryBytes;
    Rng rng{seed};
    const int batch = std::clamp(count / 20, 1, 10);
    const auto pause = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(batch / perSecond));
    auto next = Clock::now();
    for (int i = 0; i < count; ++i) {
        const Volunteer v = volunteer(rng, demand);
        coord::CoordinatorClientConfig c;
        c.address = address;
        c.name = "synthetic-" + std::to_string(first + i);
        c.listenAddress = "127.0.0.1:" + std::to_string(20000 + (first + i) % 40000);
        c.profileJson = profileJson(v);
        c.uploadBytesPerSecond = v.upload;
        c.handshakeTimeout = 30s;
        const auto started = Clock::now();
        auto once = std::make_shared<std::atomic<bool>>(false);
        auto last = std::make_shared<coord::Assignment>(); // what this node was told before (its client's strand)
        coord::CoordinatorClientEvents e;
        e.registered = [&swarm, started, once](const coord::Registration &) {
            ++swarm.registrations;
            if (once->exchange(true))
                return;
            ++swarm.registered;
            std::lock_guard lock(swarm.mutex);
            swarm.registrationMs.push_back(ms(Clock::now() - started));
        };
        e.heartbeatAcked = [&swarm](std::chrono::microseconds rtt) {
            if (!swarm.measuring)
                return;
            std::lock_guard lock(swarm.mutex);
            swarm.roundTripMs.push_back(double(rtt.count()) / 1000.0);
        };
        e.assignmentChanged = [&swarm, last](const coord::Assignment &a) {
            ++swarm.assignments;
            ++swarm.pushesByKind[pushKind(*last, a)];
            *last = a;
            const int bytes = int(net::encodeFrame(net::AssignmentUpdate{coord::toWire(a)}).size());
            for (int seen = swarm.assignmentBytesMax; bytes > seen;)
                if (swarm.assignmentBytesMax.compare_exchange_weak(seen, bytes))
                    break;
        };
        e.error = [&swarm](const std::string &text) {
            if (swarm.errors++ < 5)
                std::fprintf(stderr, "node error: %s\n", text.c_str());
        };
        auto client = std::make_unique<coord::CoordinatorClient>(ctx, c, net::Identity::generate(), std::move(e));
        client->report({100, 0, 0, coord::NodeActivity::Waiting, 0, 0});
        client->start();
        {
            std::lock_guard lock(swarm.mutex);
            swarm.clients.push_back(std::move(client));
        }
        if ((i + 1) % batch == 0) { // a crowd at a steady rate, not a single instant
            next += pause;
            std::this_thread::sleep_until(next);
        }
    }
}

struct Measured
{
    double p50 = 0, p99 = 0, max = 0;
    size_t samples = 0;
};

Measured measureHeartbeats(Swarm &swarm, std::chrono::seconds duration)
{
    {
        std::lock_guard lock(swarm.mutex);
        swarm.roundTripMs.clear();
    }
    swarm.measuring = true;
    std::this_thread::sleep_for(duration);
    swarm.measuring = false;
    std::lock_guard lock(swarm.mutex);
    return {percentile(swarm.roundTripMs, 0.5), percentile(swarm.roundTripMs, 0.99),
            swarm.roundTripMs.empty() ? 0 : *std::max_element(swarm.roundTripMs.begin(), swarm.roundTripMs.end()),
            swarm.roundTripMs.size()};
}

// ---- Client processes --------------------------------------------------------------
// A client process (--client) runs its share of the nodes and talks to the parent in
// lines: it prints "P registered errors assignments" every 200 ms; "measure S" makes it
// collect S seconds of heartbeat round trips and print "H n v1 v2 ..."; "regs" prints
// "G n v1 v2 ..." (registration latencies); "quit" ends it.

struct ClientArgs
{
    std::string address;
    int first = 0, count = 0;
    uint64_t seed = 1;
    double perSecond = 500;
};

std::string joined(char tag, const std::vector<double> &v)
{
    std::string line(1, tag);
    line += " " + std::to_string(v.size());
    char num[32];
    for (double x : v) {
        std::snprintf(num, sizeof num, " %.3f", x);
        line += num;
    }
    return line + "\n";
}

void writeAll(int fd, const std::string &text)
{
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n <= 0)
            return;
        done += size_t(n);
    }
}

int runClients(const ClientArgs &a)
{
    net::NetContext ctx(1);
    Swarm swarm;
    std::thread ramp([&] {
        startNodes(swarm, ctx, net::CoordinatorAddress::parse(a.address), a.first, a.count, a.seed, a.perSecond);
    });
    std::string in;
    bool quit = false;
    while (!quit) {
        pollfd p{STDIN_FILENO, POLLIN, 0};
        if (::poll(&p, 1, 200) > 0) {
            char buf[256];
            const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
            if (n <= 0)
                break; // the parent is gone
            in.append(buf, size_t(n));
        }
        for (size_t eol; (eol = in.find('\n')) != std::string::npos; in.erase(0, eol + 1)) {
            const std::string cmd = in.substr(0, eol);
            if (cmd.rfind("measure ", 0) == 0) {
                const Measured m = measureHeartbeats(swarm, std::chrono::seconds(std::stoi(cmd.substr(8))));
                (void)m;
                std::lock_guard lock(swarm.mutex);
                writeAll(STDOUT_FILENO, joined('H', swarm.roundTripMs));
            } else if (cmd == "regs") {
                std::lock_guard lock(swarm.mutex);
                writeAll(STDOUT_FILENO, joined('G', swarm.registrationMs));
            } else if (cmd == "quit") {
                quit = true;
            }
        }
        int training = 0, checking = 0;
        {
            std::lock_guard lock(swarm.mutex);
            for (const auto &c : swarm.clients) {
                const coord::Assignment now = c->assignment();
                training += now.isTraining() ? 1 : 0;
                checking += !now.isTraining() && now.reason == coord::kCheckingReachability ? 1 : 0;
            }
        }
        writeAll(
            STDOUT_FILENO, "P " + std::to_string(swarm.registered.load()) + " " + std::to_string(swarm.errors.load()) +
                               " " + std::to_string(swarm.assignments.load()) + " " + std::to_string(training) + " " +
                               std::to_string(swarm.assignmentBytesMax.load()) + " " + std::to_string(checking) +
                               [&] {
                                   std::string kinds;
                                   for (const auto &k : swarm.pushesByKind)
                                       kinds += " " + std::to_string(k.load());
                                   return kinds;
                               }() +
                               "\n");
    }
    ramp.join();
    std::lock_guard lock(swarm.mutex);
    swarm.clients.clear();
    return 0;
}

struct ClientProcess
{
    pid_t pid = -1;
    int in = -1, out = -1; // its stdin (we write), its stdout (we read)
    std::string buffer;
    int registered = 0, errors = 0, assignments = 0, training = 0, assignmentBytesMax = 0;
    int checking = 0; // registered, not placed yet: their reachability check has no verdict
    std::array<int, kPushKinds> pushesByKind{};
};

ClientProcess spawnClients(const ClientArgs &a)
{
    int toChild[2], fromChild[2];
    if (pipe(toChild) != 0 || pipe(fromChild) != 0)
        throw Error("pipe failed");
    const std::string self = std::filesystem::canonical("/proc/self/exe").string();
    const std::vector<std::string> args = {self,        "--client",
                                           "--address", a.address,
                                           "--first",   std::to_string(a.first),
                                           "--count",   std::to_string(a.count),
                                           "--seed",    std::to_string(a.seed),
                                           "--rate",    std::to_string(a.perSecond)};
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(toChild[0], STDIN_FILENO);
        dup2(fromChild[1], STDOUT_FILENO);
        for (int fd : {toChild[0], toChild[1], fromChild[0], fromChild[1]})
            close(fd);
        std::vector<char *> argv;
        for (const auto &x : args)
            argv.push_back(const_cast<char *>(x.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(toChild[0]);
    close(fromChild[1]);
    return {pid, toChild[1], fromChild[0], {}};
}

// Reads whatever the client processes printed within `timeout`; returns the lines that
// are not progress ("P ...") lines, which update the processes' counts.
std::vector<std::pair<size_t, std::string>> readClients(std::vector<ClientProcess> &procs,
                                                        std::chrono::milliseconds timeout)
{
    std::vector<pollfd> fds;
    for (const auto &p : procs)
        fds.push_back({p.out, POLLIN, 0});
    std::vector<std::pair<size_t, std::string>> lines;
    if (::poll(fds.data(), fds.size(), int(timeout.count())) <= 0)
        return lines;
    for (size_t i = 0; i < procs.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP)))
            continue;
        char buf[65536];
        const ssize_t n = ::read(procs[i].out, buf, sizeof buf);
        if (n <= 0)
            continue;
        auto &b = procs[i].buffer;
        b.append(buf, size_t(n));
        for (size_t eol; (eol = b.find('\n')) != std::string::npos; b.erase(0, eol + 1)) {
            std::string line = b.substr(0, eol);
            if (line.rfind("P ", 0) == 0)
                std::sscanf(line.c_str(), "P %d %d %d %d %d %d %d %d %d %d %d", &procs[i].registered, &procs[i].errors,
                            &procs[i].assignments, &procs[i].training, &procs[i].assignmentBytesMax, &procs[i].checking,
                            &procs[i].pushesByKind[0], &procs[i].pushesByKind[1], &procs[i].pushesByKind[2],
                            &procs[i].pushesByKind[3], &procs[i].pushesByKind[4]);
            else
                lines.emplace_back(i, std::move(line));
        }
    }
    return lines;
}

// Sends `command` to every client process and gathers each one's reply tagged `tag`.
std::vector<double> askClients(std::vector<ClientProcess> &procs, const std::string &command, char tag,
                               std::chrono::seconds timeout)
{
    for (auto &p : procs)
        writeAll(p.in, command + "\n");
    std::vector<double> values;
    size_t replies = 0;
    const auto deadline = Clock::now() + timeout;
    while (replies < procs.size() && Clock::now() < deadline)
        for (const auto &[i, line] : readClients(procs, 200ms)) {
            if (line.empty() || line[0] != tag)
                continue;
            ++replies;
            std::istringstream in(line.substr(1));
            size_t n = 0;
            in >> n;
            double x;
            while (in >> x)
                values.push_back(x);
        }
    return values;
}

int sumOf(const std::vector<ClientProcess> &procs, int ClientProcess::*field)
{
    int sum = 0;
    for (const auto &p : procs)
        sum += p.*field;
    return sum;
}

double cpuOf(const std::vector<ClientProcess> &procs)
{
    double sum = 0;
    for (const auto &p : procs)
        sum += procUsage(p.pid).cpuSeconds;
    return sum;
}

// Takes this program's own options (--nodes, and --client with its arguments) out of
// argv, so that the shared parser sees only the shared ones.
struct OwnArgs
{
    int nodes = 0;
    std::vector<std::string> coordinatorArgs; // --storm-hold-max-ms, passed on
    bool coordinatorLog = false;              // the coordinator logs info (its planning rounds) to stderr
    bool client = false;
    ClientArgs clientArgs;
};

OwnArgs takeOwnArgs(int &argc, char **argv)
{
    OwnArgs o;
    int out = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        if (a == "--client")
            o.client = true;
        else if (a == "--nodes" && hasValue)
            o.nodes = std::stoi(argv[++i]);
        else if (a == "--storm-hold-max-ms" && hasValue)
            o.coordinatorArgs.insert(o.coordinatorArgs.end(), {a, argv[++i]});
        else if (a == "--coordinator-log")
            o.coordinatorLog = true;
        else if (a == "--address" && hasValue)
            o.clientArgs.address = argv[++i];
        else if (a == "--first" && hasValue)
            o.clientArgs.first = std::stoi(argv[++i]);
        else if (a == "--count" && hasValue)
            o.clientArgs.count = std::stoi(argv[++i]);
        else if (a == "--seed" && hasValue)
            o.clientArgs.seed = std::stoull(argv[++i]);
        else if (a == "--rate" && hasValue)
            o.clientArgs.perSecond = std::stod(argv[++i]);
        else
            argv[out++] = argv[i];
    }
    argc = out;
    return o;
}

} // namespace

int main(int argc, char **argv)
{
    OwnArgs own = takeOwnArgs(argc, argv);
    raiseFileLimit();
    std::signal(SIGPIPE, SIG_IGN);
    if (own.client) {
        log::setMinimumLevel(log::Level::Error);
        return runClients(own.clientArgs);
    }
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_coordinator",
        "rookery-coordinator under 1,000 synthetic nodes (200 with --quick, N with --nodes N, in as many client "
        "processes as it takes): heartbeat round trips, registrations, assignment pushes, its CPU, memory per node "
        "and restart time; planner time for 1,000 and 10,000 volunteers. --storm-hold-max-ms MS is passed on to the "
        "coordinator; --coordinator-log has it log its planning rounds (and all else at info) to stderr.");
    bench::BenchReport report("bench_coordinator", opts.quick);
    log::setMinimumLevel(log::Level::Warning);
    const int nodes = own.nodes > 0 ? own.nodes : opts.quick ? 200 : 1000;
    const auto window = opts.quick ? 10s : 30s;
    constexpr int kNodesPerProcess = 2500;
    const double perSecond = 500; // arrivals a second, all processes together
    const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));

    char tmpl[] = "/tmp/bench_coordinator.XXXXXX";
    const std::filesystem::path dataDir = mkdtemp(tmpl);
    Child child = startCoordinator(dataDir / "coord", nodes, own.coordinatorArgs, !own.coordinatorLog);
    std::printf("coordinator pid %d at %s\n", int(child.pid), child.address.c_str());
    const auto address = net::CoordinatorAddress::parse(child.address);
    int lostRegistrations = 0;
    {
        net::NetContext ctx(1);
        // Baseline: one node alone.
        Swarm alone;
        startNodes(alone, ctx, address, 0, 1, 7, 1000);
        while (alone.registered < 1)
            std::this_thread::sleep_for(10ms);
        const Measured baseline = measureHeartbeats(alone, opts.quick ? 4s : 8s);
        std::printf("one node: heartbeat round trip p50 %.2f ms, p99 %.2f ms (%zu samples)\n", baseline.p50,
                    baseline.p99, baseline.samples);
        alone.clients.front()->leave("baseline done");
        std::this_thread::sleep_for(1s);
        alone.clients.clear();

        const ProcUsage before = procUsage(child.pid);
        const auto rampStart = Clock::now();
        std::vector<ClientProcess> procs;
        const int processes = (nodes + kNodesPerProcess - 1) / kNodesPerProcess;
        for (int p = 0; p < processes; ++p) {
            const int first = p * nodes / processes, last = (p + 1) * nodes / processes;
            procs.push_back(spawnClients({child.address, first, last - first, uint64_t(1 + p), perSecond / processes}));
        }
        const auto deadline = rampStart + std::chrono::seconds(60 + nodes / 50);
        while (sumOf(procs, &ClientProcess::registered) < nodes && Clock::now() < deadline)
            readClients(procs, 200ms);
        const double rampMs = ms(Clock::now() - rampStart);
        // The plans and their pushes: until every node's reachability check has its
        // verdict (a newcomer is placed with it) and no node has heard of a change for
        // 3 s, so that the pushes counted are the whole ramp's and the heartbeats are
        // measured with the planning rounds done.
        int pushes = -1;
        const auto settleStart = Clock::now();
        auto quietSince = settleStart, reported = settleStart;
        const auto settleDeadline = settleStart + std::chrono::seconds(60 + nodes / 50);
        while ((Clock::now() - quietSince < 3s || sumOf(procs, &ClientProcess::checking) > 0) &&
               Clock::now() < settleDeadline) {
            readClients(procs, 200ms);
            if (const int now = sumOf(procs, &ClientProcess::assignments); now != pushes) {
                pushes = now;
                quietSince = Clock::now();
            }
            if (Clock::now() - reported >= 10s) {
                reported = Clock::now();
                std::printf("placing: %d training, %d still being checked for reachability, %d pushes so far\n",
                            sumOf(procs, &ClientProcess::training), sumOf(procs, &ClientProcess::checking), pushes);
            }
        }
        const double settleMs = ms(Clock::now() - settleStart);
        const int checkingAtWindow = sumOf(procs, &ClientProcess::checking);
        if (checkingAtWindow > 0)
            std::printf("placement did not settle within %.0f s: %d nodes still being checked for reachability\n",
                        settleMs / 1000, checkingAtWindow);
        const ProcUsage steadyStart = procUsage(child.pid);
        const double clientCpuStart = cpuOf(procs);
        const auto windowStart = Clock::now();
        const std::vector<double> roundTrips =
            askClients(procs, "measure " + std::to_string(window.count()), 'H', window + 60s);
        const double windowS = std::chrono::duration<double>(Clock::now() - windowStart).count();
        const ProcUsage steadyEnd = procUsage(child.pid);
        const double clientCpu = cpuOf(procs) - clientCpuStart;
        const std::vector<double> reg = askClients(procs, "regs", 'G', 60s);
        readClients(procs, 500ms);
        const int registered = sumOf(procs, &ClientProcess::registered);
        const int errors = sumOf(procs, &ClientProcess::errors);
        pushes = sumOf(procs, &ClientProcess::assignments);
        const int training = sumOf(procs, &ClientProcess::training);
        int assignmentBytesMax = 0;
        for (const auto &p : procs)
            assignmentBytesMax = std::max(assignmentBytesMax, p.assignmentBytesMax);
        for (auto &p : procs) {
            writeAll(p.in, "quit\n");
            close(p.in);
        }
        for (auto &p : procs) {
            waitpid(p.pid, nullptr, 0);
            close(p.out);
        }
        const int lost = nodes - registered;
        lostRegistrations = lost;
        const double cpuSteady = steadyEnd.cpuSeconds - steadyStart.cpuSeconds;
        const double rssKiBPerNode = (steadyEnd.rssMiB - before.rssMiB) * 1024 / nodes;
        const Measured m{percentile(roundTrips, 0.5), percentile(roundTrips, 0.99),
                         roundTrips.empty() ? 0 : *std::max_element(roundTrips.begin(), roundTrips.end()),
                         roundTrips.size()};
        std::printf("%d nodes in %d client processes registered in %.0f ms, %.0f a second (lost %d, errors %d, "
                    "assignment pushes %d: %.2f a node; %d training)\n",
                    registered, processes, rampMs, registered / (rampMs / 1000), lost, errors, pushes,
                    double(pushes) / nodes, training);
        std::array<int, kPushKinds> byKind{};
        for (const auto &p : procs)
            for (int k = 0; k < kPushKinds; ++k)
                byKind[k] += p.pushesByKind[k];
        std::printf("pushes by what they changed: %d still waiting (a new reason), %d placed, %d moved, %d "
                    "reseated (rings, shard or count), %d unplaced\n",
                    byKind[kStillWaiting], byKind[kPlaced], byKind[kMoved], byKind[kReseated], byKind[kUnplaced]);
        for (int k = 0; k < kPushKinds; ++k)
            report.add(kPushKindKeys[k], double(byKind[k]));
        std::printf("largest assignment a node received: %d bytes on the wire\n", assignmentBytesMax);
        std::printf("registration (connect + TLS + register): p50 %.1f ms, p99 %.1f ms\n", percentile(reg, 0.5),
                    percentile(reg, 0.99));
        std::printf("heartbeats over %.0f s: %zu round trips, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", windowS,
                    m.samples, m.p50, m.p99, m.max);
        std::printf("coordinator: %.2f CPU s while %d nodes registered, %.2f CPU s (%.1f%% of a core) over the "
                    "heartbeat window; RSS %.1f MiB empty, %.1f MiB with the nodes (%.1f KiB a node), peak %.1f "
                    "MiB\n",
                    steadyStart.cpuSeconds - before.cpuSeconds, nodes, cpuSteady, 100 * cpuSteady / windowS,
                    before.rssMiB, steadyEnd.rssMiB, rssKiBPerNode, steadyEnd.peakRssMiB);
        std::printf("client processes: %.1f%% of the machine's %ld cores over the heartbeat window\n",
                    100 * clientCpu / (windowS * double(cores)), cores);
        report.setResult(baseline.p99, m.p99, "ms (heartbeat round trip p99)", "p99_ratio");
        report.add("nodes", double(nodes));
        report.add("client_processes", double(processes));
        report.add("lost_registrations", double(lost));
        report.add("registration_errors", double(errors));
        report.add("p50_ms", m.p50);
        report.add("p99_ms", m.p99);
        report.add("max_ms", m.max);
        report.add("heartbeats_measured", double(m.samples));
        // The coordinator runs with --heartbeat-ms 1000 and its default budget (2,000 a second).
        const auto pace = coord::heartbeatPace(std::chrono::milliseconds(1000), size_t(nodes), 2000);
        report.add("heartbeat_interval_ms", double(pace.count()));
        report.add("heartbeats_expected", double(nodes) * windowS * 1000 / double(pace.count()));
        report.add("baseline_p50_ms", baseline.p50);
        report.add("registration_p50_ms", percentile(reg, 0.5));
        report.add("registration_p99_ms", percentile(reg, 0.99));
        report.add("registration_ramp_ms", rampMs);
        report.add("registrations_per_s", registered / (rampMs / 1000));
        report.add("assignment_pushes", double(pushes));
        report.add("pushes_per_node", double(pushes) / nodes);
        report.add("nodes_training", double(training));
        report.add("placement_settle_ms", settleMs);
        report.add("nodes_checking_at_window", double(checkingAtWindow));
        report.add("assignment_bytes_max", double(assignmentBytesMax));
        report.add("coordinator_cpu_s_registration", steadyStart.cpuSeconds - before.cpuSeconds);
        report.add("coordinator_cpu_s_heartbeats", cpuSteady);
        report.add("coordinator_cpu_percent_heartbeats", 100 * cpuSteady / windowS);
        report.add("clients_cpu_percent_of_machine", 100 * clientCpu / (windowS * double(cores)));
        report.add("coordinator_empty_rss_mib", before.rssMiB);
        report.add("coordinator_rss_mib", steadyEnd.rssMiB);
        report.add("coordinator_peak_rss_mib", steadyEnd.peakRssMiB);
        report.add("rss_kib_per_node", rssKiBPerNode);
    }
    int exitCode = stopCoordinator(child);
    // A restart with every node known: the run, its plan and its assignments come back.
    {
        const auto started = Clock::now();
        Child restarted = startCoordinator(dataDir / "coord", nodes, own.coordinatorArgs, !own.coordinatorLog);
        const double restartMs = ms(Clock::now() - started);
        const ProcUsage u = procUsage(restarted.pid);
        std::printf("restart with %d known nodes: listening after %.0f ms, RSS %.1f MiB\n", nodes, restartMs, u.rssMiB);
        report.add("restart_ms", restartMs);
        report.add("restart_rss_mib", u.rssMiB);
        if (const int again = stopCoordinator(restarted); exitCode == 0)
            exitCode = again; // the first failure is the one to report
    }
    report.add("coordinator_exit_code", double(exitCode));
    std::filesystem::remove_all(dataDir);

    for (int n : {1000, 10000}) {
        if (opts.quick && n > 1000)
            continue;
        int clusters = 0;
        const double t = plannerMs(n, 3, &clusters);
        std::printf("planner: %d volunteers -> %d clusters in %.0f ms\n", n, clusters, t);
        report.add("planner_" + std::to_string(n) + "_ms", t);
        const PlanComparison c = incrementalVsGlobal(n, 3);
        std::printf("placed as they come: %d of %d training, %.0f samples/s predicted; planned at once: %d training, "
                    "%.0f samples/s predicted (%.2fx)\n",
                    c.incrementalTraining, n, c.incrementalPredicted, c.globalTraining, c.globalPredicted,
                    c.globalPredicted > 0 ? c.incrementalPredicted / c.globalPredicted : 0.0);
        const std::string key = "plan_" + std::to_string(n);
        report.add(key + "_incremental_training", c.incrementalTraining);
        report.add(key + "_incremental_predicted", c.incrementalPredicted);
        report.add(key + "_global_training", c.globalTraining);
        report.add(key + "_global_predicted", c.globalPredicted);
    }
    report.finish(opts.jsonPath);
    // What must hold whatever the machine's speed (CI runs --quick): every node
    // registered, and the coordinator stopped cleanly both times.
    if (lostRegistrations > 0 || exitCode != 0) {
        std::fprintf(stderr, "bench_coordinator: %d registrations lost, coordinator exit status %d\n",
                     lostRegistrations, exitCode);
        return 1;
    }
    return 0;
}
