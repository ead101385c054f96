// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/launcher/swarm_launcher.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/common/error.h"

extern char **environ;

namespace rookery::launcher {
namespace {

using Clock = std::chrono::steady_clock;

struct Child
{
    std::string name;
    std::vector<std::string> args; // program first
    std::vector<std::string> env;  // NAME=VALUE added to this process's environment
    pid_t pid = 0;
    int out = -1; // read end of its stdout+stderr
    std::string partial;
    int exitCode = -1;
    bool exited = false;
    int restarts = 0;
};

// Starts the child with its stdout and stderr on a pipe. The child gets SIGTERM when the
// thread that started it ends (PR_SET_PDEATHSIG), so a launcher or app that is killed
// does not leave its swarm running: each node then checkpoints and exits by itself.
void spawn(Child &c)
{
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0)
        throw Error("cannot create a pipe for " + c.name + ": " + std::strerror(errno));
    int status[2]; // the child writes errno here when exec fails; closes on exec otherwise
    if (::pipe2(status, O_CLOEXEC) != 0) {
        ::close(out[0]);
        ::close(out[1]);
        throw Error("cannot create a pipe for " + c.name + ": " + std::strerror(errno));
    }
    std::vector<char *> argv;
    for (auto &a : c.args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char *> envp; // its own entries first: getenv() takes the first match
    for (auto &e : c.env)
        envp.push_back(e.data());
    for (char **e = environ; *e; ++e)
        envp.push_back(*e);
    envp.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) { // only async-signal-safe calls from here on
        ::dup2(out[1], STDOUT_FILENO);
        ::dup2(out[1], STDERR_FILENO);
        if (::prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && ::getppid() == parent)
            ::execve(argv[0], argv.data(), envp.data());
        else
            errno = ESRCH; // the parent is already gone
        const int err = errno;
        (void)!::write(status[1], &err, sizeof err);
        ::_exit(127);
    }
    const int forkErrno = errno;
    ::close(out[1]);
    ::close(status[1]);
    int childErrno = 0;
    ssize_t n = 0;
    if (pid > 0)
        do
            n = ::read(status[0], &childErrno, sizeof childErrno);
        while (n < 0 && errno == EINTR);
    ::close(status[0]);
    if (pid < 0 || n > 0) {
        ::close(out[0]);
        if (pid > 0)
            ::waitpid(pid, nullptr, 0);
        throw Error("cannot start " + c.args[0] + ": " + std::strerror(pid < 0 ? forkErrno : childErrno));
    }
    ::fcntl(out[0], F_SETFL, O_NONBLOCK);
    c.pid = pid;
    c.out = out[0];
    c.exited = false;
    c.exitCode = -1;
}

} // namespace

uint16_t statusPortInLine(const std::string &line)
{
    constexpr std::string_view kPrefix = "status: https://";
    const auto path = line.find("/v1/status");
    if (line.rfind(kPrefix, 0) != 0 || path == std::string::npos)
        return 0;
    const auto colon = line.rfind(':', path);
    if (colon == std::string::npos || colon < kPrefix.size())
        return 0;
    const long port = std::strtol(line.c_str() + colon + 1, nullptr, 10);
    return port > 0 && port < 65536 ? uint16_t(port) : 0;
}

std::filesystem::path programDirectory()
{
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::current_path() : exe.parent_path();
}

struct SwarmLauncher::Impl
{
    SwarmLauncherSettings settings;
    LineHandler lines;
    Child coordinator;
    std::vector<Child> nodes;
    std::string address;
    uint16_t statusPort = 0;

    void drain(Child &c, bool all)
    {
        char buf[4096];
        for (;;) {
            const ssize_t n = ::read(c.out, buf, sizeof buf);
            if (n <= 0)
                break;
            c.partial.append(buf, size_t(n));
            size_t nl;
            while ((nl = c.partial.find('\n')) != std::string::npos) {
                const std::string line = c.partial.substr(0, nl);
                c.partial.erase(0, nl + 1);
                onLine(c, line);
            }
            if (!all)
                break;
        }
    }

    void onLine(Child &c, const std::string &line)
    {
        if (&c == &coordinator && address.empty() && line.rfind("address: ", 0) == 0)
            address = line.substr(9);
        if (&c == &coordinator && statusPort == 0)
            statusPort = statusPortInLine(line);
        if (lines)
            lines(c.name, line);
    }

    void reap(Child &c)
    {
        if (c.pid <= 0)
            return;
        int status = 0;
        const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
        if (r != c.pid)
            return;
        drain(c, true);
        ::close(c.out);
        c.out = -1;
        c.pid = 0;
        c.exited = true;
        c.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (lines)
            lines(c.name, WIFEXITED(status) ? "exited with status " + std::to_string(c.exitCode)
                                            : "killed by signal " + std::to_string(WTERMSIG(status)));
        if (&c != &coordinator && WIFSIGNALED(status) && settings.restartCrashed && coordinator.pid > 0) {
            ++c.restarts;
            spawn(c);
            if (lines)
                lines(c.name, "restarted, pid " + std::to_string(c.pid) + " (it resumes from its checkpoint)");
        }
    }

    void terminate(Child &c, std::chrono::seconds grace)
    {
        if (c.pid <= 0)
            return;
        ::kill(c.pid, SIGTERM);
        const auto deadline = Clock::now() + grace;
        while (c.pid > 0 && Clock::now() < deadline) {
            drain(c, true);
            int status = 0;
            if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
                c.pid = 0;
                break;
            }
            ::usleep(50 * 1000);
        }
        if (c.pid > 0) {
            ::kill(c.pid, SIGKILL);
            ::waitpid(c.pid, nullptr, 0);
            c.pid = 0;
        }
        if (c.out >= 0) {
            drain(c, true);
            ::close(c.out);
            c.out = -1;
        }
    }
};

SwarmLauncher::SwarmLauncher(SwarmLauncherSettings settings, LineHandler lines)
    : d(std::make_unique<Impl>())
{
    d->settings = std::move(settings);
    d->lines = std::move(lines);
    if (d->settings.nodes < 1)
        throw Error("a local swarm needs at least one node");
    if (d->settings.binDir.empty())
        d->settings.binDir = programDirectory();
}

SwarmLauncher::~SwarmLauncher() { stop(); }

const std::string &SwarmLauncher::address() const { return d->address; }

void SwarmLauncher::start(std::chrono::seconds timeout)
{
    auto &s = d->settings;
    const auto coordinatorBin = s.binDir / "rookery-coordinator";
    const auto nodeBin = s.binDir / "rookery-node";
    for (const auto &bin : {coordinatorBin, nodeBin})
        if (::access(bin.c_str(), X_OK) != 0)
            throw Error("cannot find " + bin.string() + " (build it, or install the rookery-node package)");
    std::filesystem::create_directories(s.workDir);

    d->coordinator.name = "coordinator";
    d->coordinator.args = {coordinatorBin.string(), "--data-dir", (s.workDir / "coordinator").string(), "--bind",
                           "127.0.0.1", "--port", "0", "--status-port", "0", "--relay-port", "0",
                           // Loopback only, so open admission admits only this machine's nodes;
                           // every node comes from 127.0.0.1, so no per-address caps either.
                           "--open", "--max-nodes-per-address", "0", "--max-links-per-address", "0",
                           "--registrations-per-minute", "0"};
    if (s.clusterSize > 0)
        d->coordinator.args.insert(d->coordinator.args.end(), {"--cluster-size", std::to_string(s.clusterSize)});
    if (!s.datasetDir.empty()) // the copy it serves to nodes without one
        d->coordinator.args.insert(d->coordinator.args.end(), {"--dataset-dir", s.datasetDir.string()});
    // Every node is known: plan when all have registered, however slowly they start.
    d->coordinator.args.insert(d->coordinator.args.end(),
                               {"--expect-nodes", std::to_string(s.nodes), "--first-plan-delay-ms", "60000"});
    d->coordinator.args.insert(d->coordinator.args.end(), s.coordinatorArgs.begin(), s.coordinatorArgs.end());
    spawn(d->coordinator);
    const auto deadline = Clock::now() + timeout;
    while (d->address.empty()) {
        pollfd p{d->coordinator.out, POLLIN, 0};
        ::poll(&p, 1, 100);
        d->drain(d->coordinator, true);
        d->reap(d->coordinator);
        if (d->coordinator.exited)
            throw Error("the coordinator exited with status " + std::to_string(d->coordinator.exitCode) +
                        " before it was ready");
        if (Clock::now() > deadline)
            throw Error("the coordinator did not print its address within " + std::to_string(timeout.count()) + " s");
    }
    for (int i = 0; i < s.nodes; ++i) {
        Child c;
        c.name = "node " + std::to_string(i + 1);
        c.args = {nodeBin.string(),
                  "--join",
                  d->address,
                  "--name",
                  "node-" + std::to_string(i + 1),
                  "--bind",
                  "127.0.0.1", // the demo's traffic never leaves this machine
                  "--data-dir",
                  (s.workDir / ("node-" + std::to_string(i + 1))).string()};
        if (!s.datasetDir.empty())
            c.args.insert(c.args.end(), {"--dataset-dir", s.datasetDir.string()});
        if (d->statusPort > 0) // for the peer graph of a desktop attached to the node
            c.args.insert(c.args.end(), {"--status-port", std::to_string(d->statusPort)});
        c.args.insert(c.args.end(), s.nodeArgs.begin(), s.nodeArgs.end());
        if (const auto it = s.nodeExtraArgs.find(i + 1); it != s.nodeExtraArgs.end())
            c.args.insert(c.args.end(), it->second.begin(), it->second.end());
        if (const auto it = s.nodeEnvironment.find(i + 1); it != s.nodeEnvironment.end())
            c.env = it->second;
        spawn(c);
        if (d->lines)
            d->lines(c.name, "started, pid " + std::to_string(c.pid));
        d->nodes.push_back(std::move(c));
    }
}

bool SwarmLauncher::poll(std::chrono::milliseconds wait)
{
    std::vector<pollfd> fds;
    std::vector<Child *> owners;
    for (Child *c : [&] {
             std::vector<Child *> all{&d->coordinator};
             for (auto &n : d->nodes)
                 all.push_back(&n);
             return all;
         }())
        if (c->out >= 0) {
            fds.push_back({c->out, POLLIN, 0});
            owners.push_back(c);
        }
    ::poll(fds.data(), fds.size(), int(wait.count()));
    for (size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents)
            d->drain(*owners[i], true);
    bool anyRunning = false;
    for (auto &n : d->nodes) {
        d->reap(n);
        anyRunning = anyRunning || n.pid > 0;
    }
    d->reap(d->coordinator);
    return anyRunning;
}

int SwarmLauncher::nodePid(int i) const { return i >= 0 && size_t(i) < d->nodes.size() ? d->nodes[size_t(i)].pid : 0; }

int SwarmLauncher::nodeRestarts(int i) const
{
    return i >= 0 && size_t(i) < d->nodes.size() ? d->nodes[size_t(i)].restarts : 0;
}

std::vector<int> SwarmLauncher::nodeExitCodes() const
{
    std::vector<int> codes;
    for (const auto &n : d->nodes)
        codes.push_back(n.exited ? n.exitCode : -1);
    return codes;
}

void SwarmLauncher::stop()
{
    // Every node first, at once (each checkpoints), then the coordinator.
    for (auto &n : d->nodes)
        if (n.pid > 0)
            ::kill(n.pid, SIGTERM);
    for (auto &n : d->nodes)
        d->terminate(n, std::chrono::seconds(10));
    d->terminate(d->coordinator, std::chrono::seconds(5));
}

} // namespace rookery::launcher
