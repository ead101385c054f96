// SPDX-License-Identifier: GPL-3.0-or-later
#include "tests/support/emulated_internet.h"

#include <cerrno>
#include <string>

#include <QDebug>
#include <QFile>
#include <QRegularExpression>
#include <QStandardPaths>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/engine/net/netns_lab.h"
#include "tests/support/test_support.h"

namespace rookery::test {
namespace {

using namespace std::chrono_literals;
namespace in = internet;

constexpr const char *kPrefix = "rk-ei-";

int ip(const QStringList &args) { return runProgram(QStringLiteral("ip"), args, nullptr, nullptr, 20s); }

bool writeFile(const QString &path, const QString &text)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text.toUtf8()) == text.toUtf8().size();
}

// Namespaces left by an earlier test process that was killed before its destructor ran
// (its programs died with it, see NetnsProcess). Only names of our own prefix whose
// process is gone.
void removeStaleNamespaces()
{
    QString out;
    runProgram(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("list")}, &out, nullptr, 10s);
    static const QRegularExpression ours(QStringLiteral("^(rk-ei-(\\d+)-\\S+)"), QRegularExpression::MultilineOption);
    for (auto it = ours.globalMatch(out); it.hasNext();) {
        const auto m = it.next();
        const pid_t owner = pid_t(m.captured(2).toLongLong());
        if (owner != getpid() && kill(owner, 0) != 0 && errno == ESRCH)
            ip({QStringLiteral("netns"), QStringLiteral("del"), m.captured(1)});
    }
}

// Router A's and B's rules. The empty chains are the ones miniupnpd 2.3 (nftables)
// fills by default (as /etc/miniupnpd/nft_init.sh makes them); router B has them too but
// nobody fills them. Forwarding: the LAN out, replies back in, and on router A whatever
// miniupnpd opens; everything else from the internet is dropped, as a home router does.
QString routerRules()
{
    return QStringLiteral("table inet filter {\n"
                          "  chain miniupnpd { }\n"
                          "  chain prerouting_miniupnpd { }\n"
                          "  chain postrouting_miniupnpd { }\n"
                          "  chain forward {\n"
                          "    type filter hook forward priority 0; policy drop;\n"
                          "    ct state established,related accept\n"
                          "    iifname \"lan0\" oifname \"wan0\" accept\n"
                          "    jump miniupnpd\n"
                          "  }\n"
                          "  chain prerouting {\n"
                          "    type nat hook prerouting priority -100; policy accept;\n"
                          "    jump prerouting_miniupnpd\n"
                          "  }\n"
                          "  chain postrouting {\n"
                          "    type nat hook postrouting priority 100; policy accept;\n"
                          "    jump postrouting_miniupnpd\n"
                          "    oifname \"wan0\" masquerade\n"
                          "  }\n"
                          "}\n");
}

} // namespace

QString emulatedInternetUnavailable()
{
    if (QString why = netnsUnavailable(); !why.isEmpty())
        return why;
    if (runProgram(QStringLiteral("tc"), {QStringLiteral("-V")}) != 0)
        return QStringLiteral("tc is missing (apt-get install iproute2)");
    return {};
}

NetnsProcess::NetnsProcess(const QString &ns, const QString &program, const QStringList &args, const QString &logPath)
    : m_log(logPath)
{
    // Everything the child needs is made before fork(): after it, only system calls.
    const QString ipPath = QStandardPaths::findExecutable(QStringLiteral("ip"));
    std::vector<std::string> strings{"ip", "netns", "exec", ns.toStdString(), program.toStdString()};
    for (const QString &a : args)
        strings.push_back(a.toStdString());
    std::vector<char *> argv;
    for (std::string &s : strings)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string ipFile = ipPath.toStdString();
    const std::string log = logPath.toStdString();
    const pid_t parent = getpid();
    if (ipFile.empty())
        return;
    m_pid = fork();
    if (m_pid != 0)
        return;                       // the parent, or fork() failed (-1)
    prctl(PR_SET_PDEATHSIG, SIGKILL); // kept across exec: `ip netns exec` execs the program
    if (getppid() != parent)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int input = open("/dev/null", O_RDONLY);
    const int output = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (input < 0 || output < 0 || dup2(input, 0) < 0 || dup2(output, 1) < 0 || dup2(output, 2) < 0)
        _exit(127);
    execv(ipFile.c_str(), argv.data());
    _exit(127);
}

bool NetnsProcess::running()
{
    if (m_pid <= 0)
        return false;
    int status = 0;
    if (waitpid(m_pid, &status, WNOHANG) != m_pid)
        return true;
    m_exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    m_pid = -1;
    return false;
}

int NetnsProcess::stop(std::chrono::milliseconds grace)
{
    if (!running())
        return m_exitCode;
    kill(m_pid, SIGTERM);
    if (!waitFor([this] { return !running(); }, grace)) {
        kill(m_pid, SIGKILL);
        int status = 0;
        waitpid(m_pid, &status, 0);
        m_pid = -1;
        m_exitCode = -1;
    }
    return m_exitCode;
}

QString NetnsProcess::output() const
{
    QFile f(m_log);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

EmulatedInternet::EmulatedInternet()
{
    static int serial = 0;
    m_base = QStringLiteral("%1%2-%3").arg(QLatin1String(kPrefix)).arg(getpid()).arg(++serial);
    removeStaleNamespaces();
    if (qEnvironmentVariableIntValue("ROOKERY_NETNS_KEEP_LOGS") == 1) { // for a look after a failure
        m_dir.setAutoRemove(false);
        qInfo().noquote() << "ROOKERY_NETNS_KEEP_LOGS=1: the logs stay in" << m_dir.path();
    }
    m_error = m_dir.isValid() ? setUp() : QStringLiteral("no temporary directory");
}

EmulatedInternet::~EmulatedInternet()
{
    for (auto &p : m_processes)
        p->stop(10s);
    m_processes.clear();
    if (m_miniupnpd)
        m_miniupnpd->stop(5s);
    m_miniupnpd.reset();
    // Whatever still runs in a namespace made here (nothing, unless a program started
    // children of its own) goes with it.
    for (const QString &ns : m_made) {
        QString pids;
        runProgram(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("pids"), ns}, &pids, nullptr, 10s);
        for (const QString &pid : pids.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
            kill(pid_t(pid.toLongLong()), SIGKILL);
        ip({QStringLiteral("netns"), QStringLiteral("del"), ns});
    }
}

QString EmulatedInternet::ns(Site site) const
{
    static const char *const suffix[] = {"-pub", "-ra", "-rb", "-ha1", "-ha2", "-hb1", "-hb2"};
    return m_base + QLatin1String(suffix[int(site)]);
}

int EmulatedInternet::exec(Site site, const QStringList &command, QString *out) const
{
    QString err;
    const int rc =
        runProgram(QStringLiteral("ip"),
                   QStringList{QStringLiteral("netns"), QStringLiteral("exec"), ns(site)} + command, out, &err, 20s);
    if (out)
        *out += err;
    return rc;
}

NetnsProcess &EmulatedInternet::start(Site site, const QString &name, const QString &program, const QStringList &args)
{
    m_processes.push_back(std::make_unique<NetnsProcess>(ns(site), program, args, filePath(name + ".log")));
    return *m_processes.back();
}

QString EmulatedInternet::startCoordinator(const QString &program, const QStringList &args, NetnsProcess **process,
                                           QString *why)
{
    const QString dataDir = filePath(QStringLiteral("coordinator"));
    NetnsProcess &p = start(Site::Public, QStringLiteral("coordinator"), program,
                            QStringList{"--data-dir", dataDir, "--public-host", internet::kCoordinator} + args);
    *process = &p;
    const auto listening = [&] { return p.output().contains(QStringLiteral("address: wss://")); };
    waitFor([&] { return listening() || !p.running(); }, std::chrono::seconds(30));
    if (!listening()) {
        *why = QStringLiteral("the coordinator did not start listening");
        return {};
    }
    QString invite;
    // Invite-only, as a coordinator runs by default: every volunteer of these tests joins
    // with this one token.
    if (exec(Site::Public,
             {program, "invite", "--data-dir", dataDir, "--public-host", internet::kCoordinator, "--uses", "8"},
             &invite) != 0) {
        *why = "`rookery-coordinator invite` failed: " + invite;
        return {};
    }
    const QString join = invite.trimmed().section(QLatin1Char('\n'), 0, 0).trimmed();
    const QString pinned = join.section(QStringLiteral("&invite="), 0, 0);
    if (!join.startsWith(QStringLiteral("wss://") + internet::kCoordinator + ':') || pinned == join ||
        !p.output().contains("address: " + pinned + '\n')) {
        *why = "`invite` printed no join string for the running coordinator: " + invite;
        return {};
    }
    return join;
}

QString EmulatedInternet::setUp()
{
    const QString pub = ns(Site::Public);
    for (Site s :
         {Site::Public, Site::RouterA, Site::RouterB, Site::HomeA1, Site::HomeA2, Site::HomeB1, Site::HomeB2}) {
        if (ip({"netns", "add", ns(s)}) != 0)
            return "ip netns add " + ns(s) + " failed";
        m_made.push_back(ns(s));
    }
    // The public segment: a bridge, as an ISP's network seen from far enough away.
    const QList<QStringList> steps{
        {"-n", pub, "link", "set", "lo", "up"},
        {"-n", pub, "link", "add", "br0", "type", "bridge"},
        {"-n", pub, "addr", "add", QString(in::kCoordinator) + "/24", "dev", "br0"},
        {"-n", pub, "link", "set", "br0", "up"},
    };
    for (const QStringList &step : steps) {
        if (ip(step) != 0)
            return "ip " + step.join(' ') + " failed";
    }
    if (QString e = setUpRouter(Site::RouterA, in::kRouterAWan, in::kRouterALan, {Site::HomeA1, in::kHomeA1},
                                {Site::HomeA2, in::kHomeA2});
        !e.isEmpty())
        return e;
    if (QString e = setUpRouter(Site::RouterB, in::kRouterBWan, in::kRouterBLan, {Site::HomeB1, in::kHomeB1},
                                {Site::HomeB2, in::kHomeB2});
        !e.isEmpty())
        return e;
    return startMiniupnpd();
}

// The router's LAN is a bridge (lan0, as a home router's switch ports) with one veth per
// home machine; the router's rules name lan0 and wan0 only.
QString EmulatedInternet::setUpRouter(Site router, const char *wan, const char *lan,
                                      std::pair<Site, const char *> home1, std::pair<Site, const char *> home2)
{
    const QString r = ns(router), pub = ns(Site::Public);
    const QString port = router == Site::RouterA ? QStringLiteral("ra") : QStringLiteral("rb"); // its bridge port
    // The veth pairs are made inside the namespaces: nothing appears in the machine's own.
    QList<QStringList> steps{
        {"-n", r, "link", "add", "wan0", "type", "veth", "peer", "name", port, "netns", pub},
        {"-n", pub, "link", "set", port, "master", "br0"},
        {"-n", pub, "link", "set", port, "up"},
        {"-n", r, "link", "add", "lan0", "type", "bridge"},
        {"-n", r, "addr", "add", QString(wan) + "/24", "dev", "wan0"},
        {"-n", r, "addr", "add", QString(lan) + "/24", "dev", "lan0"},
        {"-n", r, "link", "set", "lo", "up"},
        {"-n", r, "link", "set", "wan0", "up"},
        {"-n", r, "link", "set", "lan0", "up"},
    };
    int n = 0;
    for (const auto &[site, host] : {home1, home2}) {
        const QString h = ns(site), lanPort = QStringLiteral("lan%1").arg(++n);
        steps += QList<QStringList>{
            {"-n", r, "link", "add", lanPort, "type", "veth", "peer", "name", "eth0", "netns", h},
            {"-n", r, "link", "set", lanPort, "master", "lan0"},
            {"-n", r, "link", "set", lanPort, "up"},
            {"-n", h, "addr", "add", QString(host) + "/24", "dev", "eth0"},
            {"-n", h, "link", "set", "lo", "up"},
            {"-n", h, "link", "set", "eth0", "up"},
            {"-n", h, "route", "add", "default", "via", lan},
        };
    }
    for (const QStringList &step : steps) {
        if (ip(step) != 0)
            return "ip " + step.join(' ') + " failed";
    }
    QString out;
    if (exec(router, {"sysctl", "-w", "net.ipv4.ip_forward=1"}, &out) != 0)
        return "cannot turn on forwarding in " + r + ": " + out;
    // A home uplink: tbf holds the WAN egress to the rate, queueing at most 50 ms.
    if (exec(router,
             {"tc", "qdisc", "add", "dev", "wan0", "root", "tbf", "rate", in::kUplinkRate, "burst", "64kb", "latency",
              "50ms"},
             &out) != 0)
        return "tc tbf failed in " + r + ": " + out;
    const QString rules = filePath(r + ".nft");
    if (!writeFile(rules, routerRules()))
        return "cannot write " + rules;
    if (exec(router, {"nft", "-f", rules}, &out) != 0)
        return "nft -f failed in " + r + ": " + out;
    return {};
}

QString EmulatedInternet::startMiniupnpd()
{
    const QString conf = filePath(QStringLiteral("miniupnpd.conf"));
    const QString config = QStringLiteral("ext_ifname=wan0\nlistening_ip=lan0\nport=0\n"
                                          "enable_upnp=yes\nenable_natpmp=yes\n"
                                          "secure_mode=yes\nsystem_uptime=yes\n"
                                          "uuid=6b1d2f0e-3a44-4c1e-9f0a-7e5c2d8b4a21\n"
                                          "allow 1024-65535 10.77.1.0/24 1024-65535\n"
                                          "deny 0-65535 0.0.0.0/0 0-65535\n");
    if (!writeFile(conf, config))
        return "cannot write " + conf;
    // -d: foreground, logging to stderr; -P: its pid file here, not in /var/run.
    m_miniupnpd =
        std::make_unique<NetnsProcess>(ns(Site::RouterA), QStringLiteral("/usr/sbin/miniupnpd"),
                                       QStringList{"-d", "-f", conf, "-P", filePath(QStringLiteral("miniupnpd.pid"))},
                                       filePath(QStringLiteral("miniupnpd.log")));
    if (!waitFor([this] { return miniupnpdLog().contains("Listening for NAT-PMP") || !m_miniupnpd->running(); }, 10s) ||
        !m_miniupnpd->running())
        return "miniupnpd did not come up on router A:\n" + miniupnpdLog();
    return {};
}

QString EmulatedInternet::redirectionsA() const
{
    QString out;
    exec(Site::RouterA, {"nft", "list", "chain", "inet", "filter", "prerouting_miniupnpd"}, &out);
    return out;
}

bool EmulatedInternet::canConnect(Site from, const QString &host, int port, QString *why) const
{
    // bash's /dev/tcp: a TCP handshake and nothing more (the peer port speaks TLS).
    QString out;
    const int rc =
        exec(from, {"timeout", "5", "bash", "-c", QStringLiteral("exec 3<>/dev/tcp/%1/%2").arg(host).arg(port)}, &out);
    if (why)
        *why = rc == 124 ? QStringLiteral("no answer within 5 s") : out.trimmed();
    return rc == 0;
}

QString EmulatedInternet::pinholesA() const
{
    QString out;
    exec(Site::RouterA, {"nft", "list", "chain", "inet", "filter", "miniupnpd"}, &out);
    return out;
}

QString EmulatedInternet::miniupnpdLog() const
{
    QFile f(filePath(QStringLiteral("miniupnpd.log")));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

QString EmulatedInternet::describe() const
{
    const auto a = [](const char *text) { return QString::fromLatin1(text); };
    const auto home = [&](const char *name, Site site, const char *host, const char *gateway) {
        return QStringLiteral("  home %1 %2: eth0 %3/24, default via %4\n").arg(a(name), ns(site), a(host), a(gateway));
    };
    return "public " + ns(Site::Public) + ": bridge br0, coordinator " + a(in::kCoordinator) + "/24\n" + "router A " +
           ns(Site::RouterA) + ": wan0 " + a(in::kRouterAWan) + "/24 (tbf " + a(in::kUplinkRate) + "), bridge lan0 " +
           a(in::kRouterALan) + "/24, nftables masquerade, miniupnpd (UPnP IGD + NAT-PMP)\n" +
           home("A1", Site::HomeA1, in::kHomeA1, in::kRouterALan) +
           home("A2", Site::HomeA2, in::kHomeA2, in::kRouterALan) + "router B " + ns(Site::RouterB) + ": wan0 " +
           a(in::kRouterBWan) + "/24 (tbf " + a(in::kUplinkRate) + "), bridge lan0 " + a(in::kRouterBLan) +
           "/24, nftables masquerade, no port mapping\n" + home("B1", Site::HomeB1, in::kHomeB1, in::kRouterBLan) +
           home("B2", Site::HomeB2, in::kHomeB2, in::kRouterBLan).chopped(1);
}

} // namespace rookery::test
