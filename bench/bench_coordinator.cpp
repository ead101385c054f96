// SPDX-License-Identifier: GPL-3.0-or-later
// bench_coordinator: rookery-coordinator in a child process, and 1,000 synthetic nodes
// (real CoordinatorClients over TLS, in this process, sharing one NetContext) that
// register and then send a heartbeat every second. Reports heartbeat round trips (p50,
// p99), registration latency, lost registrations (must be 0), and the coordinator's
// CPU time and peak memory read from /proc. The baseline is the same round trip with a
// single node. Also times the planner (genetic clustering + pipelines + rings) for
// 1,000 and 10,000 volunteers.
#include <algorithm>
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

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/support/bench_report.h"
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/splitmix64.h"
#include "engine/coord/coordinator_client.h"
#include "engine/device/capability_profile.h"
#include "engine/model/model_zoo.h"
#include "engine/swarm/swarm_planner.h"

using namespace rookery;
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

// The same populations everywhere.
using Rng = rookery::SplitMix64;

// A heterogeneous volunteer: laptop to server.
struct Volunteer
{
    double gflops;
    uint64_t memory;
    double upload;
};

Volunteer volunteer(Rng &rng, int64_t demand)
{
    const double gflops[] = {8, 20, 45, 90, 250};
    const double memory[] = {0.3, 0.45, 0.7, 1.1, 2.0};
    const double upload[] = {5e6, 12.5e6, 50e6, 120e6};
    return {gflops[rng.next() % 5], uint64_t(double(demand) * memory[rng.next() % 5]), upload[rng.next() % 4]};
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

Child startCoordinator(const std::filesystem::path &dataDir, int nodes)
{
    const auto binary = coordinatorBinary();
    if (!std::filesystem::exists(binary))
        throw Error("cannot find " + binary.string() + ": build rookery-coordinator first");
    int pipefd[2];
    if (pipe(pipefd) != 0)
        throw Error("pipe failed");
    const std::vector<std::string> args = {binary.string(),
                                           "--data-dir",
                                           dataDir.string(),
                                           "--bind",
                                           "127.0.0.1",
                                           "--port",
                                           "0",
                                           "--status-port",
                                           "0",
                                           "--heartbeat-ms",
                                           "1000",
                                           "--first-plan-delay-ms",
                                           "2000",
                                           "--max-nodes",
                                           std::to_string(nodes + 100),
                                           "--io-threads",
                                           "2",
                                           "--quiet"};
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

struct Swarm
{
    std::mutex mutex;
    std::vector<double> registrationMs;
    std::vector<double> roundTripMs;
    std::atomic<int> registered{0}, registrations{0}, errors{0}, assignments{0};
    std::atomic<bool> measuring{false};
    std::vector<std::unique_ptr<coord::CoordinatorClient>> clients;
};

void startNodes(Swarm &swarm, net::NetContext &ctx, const net::CoordinatorAddress &address, int count, uint64_t seed)
{
    const int64_t demand = swarm::demandOf({model::mlpSpec(), 64, 1}).memoryBytes;
    Rng rng{seed};
    const int batch = std::max(1, count / 20);
    for (int i = 0; i < count; ++i) {
        const Volunteer v = volunteer(rng, demand);
        coord::CoordinatorClientConfig c;
        c.address = address;
        c.name = "synthetic-" + std::to_string(i);
        c.listenAddress = "127.0.0.1:" + std::to_string(20000 + i);
        c.profileJson = profileJson(v);
        c.uploadBytesPerSecond = v.upload;
        c.handshakeTimeout = 30s;
        const auto started = Clock::now();
        auto first = std::make_shared<std::atomic<bool>>(false);
        coord::CoordinatorClientEvents e;
        e.registered = [&swarm, started, first](const coord::Registration &) {
            ++swarm.registrations;
            if (first->exchange(true))
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
        e.assignmentChanged = [&swarm](const coord::Assignment &) { ++swarm.assignments; };
        e.error = [&swarm](const std::string &text) {
            if (swarm.errors++ < 5)
                std::fprintf(stderr, "node error: %s\n", text.c_str());
        };
        swarm.clients.push_back(
            std::make_unique<coord::CoordinatorClient>(ctx, c, net::Identity::generate(), std::move(e)));
        swarm.clients.back()->report({100, 0, 0, coord::NodeActivity::Waiting, 0, 0});
        swarm.clients.back()->start();
        if ((i + 1) % batch == 0) // a crowd, not a single instant
            std::this_thread::sleep_for(50ms);
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

// ---- The planner -------------------------------------------------------------------

double plannerMs(int volunteers, uint64_t seed, int *clusters)
{
    const swarm::PlanModel model{model::mlpSpec(), 64, 1};
    const int64_t demand = swarm::demandOf(model).memoryBytes;
    Rng rng{seed};
    std::vector<swarm::PlanVolunteer> v;
    for (int i = 0; i < volunteers; ++i) {
        const Volunteer x = volunteer(rng, demand);
        v.push_back({"v" + std::to_string(i), {x.gflops, int64_t(x.memory), x.upload}});
    }
    const auto start = Clock::now();
    const auto plan = swarm::planSwarm(model, v, {seed, 40, 120});
    const double t = ms(Clock::now() - start);
    *clusters = plan.clustering.clusterCount();
    return t;
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_coordinator",
        "rookery-coordinator under 1,000 synthetic nodes (200 with --quick): heartbeat round trips, "
        "registrations, its CPU and memory; planner time for 1,000 and 10,000 volunteers.");
    bench::BenchReport report("bench_coordinator", opts.quick);
    log::setMinimumLevel(log::Level::Warning);
    raiseFileLimit();
    const int nodes = opts.quick ? 200 : 1000;
    const auto window = opts.quick ? 10s : 30s;
    std::signal(SIGPIPE, SIG_IGN);

    char tmpl[] = "/tmp/bench_coordinator.XXXXXX";
    const std::filesystem::path dataDir = mkdtemp(tmpl);
    Child child = startCoordinator(dataDir / "coord", nodes);
    std::printf("coordinator pid %d at %s\n", int(child.pid), child.address.c_str());
    const auto address = net::CoordinatorAddress::parse(child.address);
    {
        net::NetContext ctx(2);
        // Baseline: one node alone.
        Swarm alone;
        startNodes(alone, ctx, address, 1, 7);
        while (alone.registered < 1)
            std::this_thread::sleep_for(10ms);
        const Measured baseline = measureHeartbeats(alone, opts.quick ? 4s : 8s);
        std::printf("one node: heartbeat round trip p50 %.2f ms, p99 %.2f ms (%zu samples)\n", baseline.p50,
                    baseline.p99, baseline.samples);
        alone.clients.front()->leave("baseline done");

        Swarm swarm;
        const ProcUsage before = procUsage(child.pid);
        const auto rampStart = Clock::now();
        startNodes(swarm, ctx, address, nodes, 1);
        const auto deadline = Clock::now() + 120s;
        while (swarm.registered < nodes && Clock::now() < deadline)
            std::this_thread::sleep_for(20ms);
        const double rampMs = ms(Clock::now() - rampStart);
        std::this_thread::sleep_for(3s); // the first plan and its pushes
        const ProcUsage steadyStart = procUsage(child.pid);
        const Measured m = measureHeartbeats(swarm, window);
        const ProcUsage steadyEnd = procUsage(child.pid);
        const int lost = nodes - swarm.registered.load();
        const double cpuSteady = steadyEnd.cpuSeconds - steadyStart.cpuSeconds;
        const double windowS = double(std::chrono::seconds(window).count());
        std::vector<double> reg;
        {
            std::lock_guard lock(swarm.mutex);
            reg = swarm.registrationMs;
        }
        std::printf("%d nodes registered in %.0f ms (lost %d, errors %d, re-registrations %d, assignment "
                    "updates %d)\n",
                    swarm.registered.load(), rampMs, lost, swarm.errors.load(),
                    swarm.registrations.load() - swarm.registered.load(), swarm.assignments.load());
        std::printf("registration (connect + TLS + register): p50 %.1f ms, p99 %.1f ms\n", percentile(reg, 0.5),
                    percentile(reg, 0.99));
        std::printf("heartbeats over %.0f s: %zu round trips, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", windowS,
                    m.samples, m.p50, m.p99, m.max);
        std::printf("coordinator: %.2f CPU s while %d nodes registered, %.2f CPU s (%.1f%% of a core) over the "
                    "heartbeat window; RSS %.1f MiB, peak %.1f MiB\n",
                    steadyStart.cpuSeconds - before.cpuSeconds, nodes, cpuSteady, 100 * cpuSteady / windowS,
                    steadyEnd.rssMiB, steadyEnd.peakRssMiB);
        report.setResult(baseline.p99, m.p99, "ms (heartbeat round trip p99)", "p99_ratio");
        report.add("nodes", double(nodes));
        report.add("lost_registrations", double(lost));
        report.add("registration_errors", double(swarm.errors.load()));
        report.add("p50_ms", m.p50);
        report.add("p99_ms", m.p99);
        report.add("max_ms", m.max);
        report.add("heartbeats_measured", double(m.samples));
        report.add("heartbeats_expected", double(nodes) * windowS);
        report.add("baseline_p50_ms", baseline.p50);
        report.add("registration_p50_ms", percentile(reg, 0.5));
        report.add("registration_p99_ms", percentile(reg, 0.99));
        report.add("registration_ramp_ms", rampMs);
        report.add("coordinator_cpu_s_registration", steadyStart.cpuSeconds - before.cpuSeconds);
        report.add("coordinator_cpu_s_heartbeats", cpuSteady);
        report.add("coordinator_cpu_percent_heartbeats", 100 * cpuSteady / windowS);
        report.add("coordinator_rss_mib", steadyEnd.rssMiB);
        report.add("coordinator_peak_rss_mib", steadyEnd.peakRssMiB);
        swarm.clients.clear();
        alone.clients.clear();
    }
    const int exitCode = stopCoordinator(child);
    report.add("coordinator_exit_code", double(exitCode));
    std::filesystem::remove_all(dataDir);

    for (int n : {1000, 10000}) {
        if (opts.quick && n > 1000)
            continue;
        int clusters = 0;
        const double t = plannerMs(n, 3, &clusters);
        std::printf("planner: %d volunteers -> %d clusters in %.0f ms\n", n, clusters, t);
        report.add("planner_" + std::to_string(n) + "_ms", t);
    }
    report.finish(opts.jsonPath);
    return 0;
}
