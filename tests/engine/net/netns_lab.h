// SPDX-License-Identifier: GPL-3.0-or-later
// A home network in two network namespaces, for the port mapping test: a "router"
// namespace running miniupnpd (LAN 10.231.0.1/24 on a veth to the host, WAN
// 198.51.101.7/24 on a veth whose other end stays inside the router) and a "host"
// namespace (10.231.0.2/24, default route via the router). Nothing is connected to the
// machine's own network, so all traffic stays inside. Needs root and `ip netns`.
//
// Why 198.51.101.7 and not a documentation address (198.51.100.0/24): miniupnpd 2.3
// refuses to map ports on an external address in a reserved range ("Port forwarding is
// impossible"), and the documentation ranges are on its list.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include <QFile>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/test_support.h"

extern char **environ;

namespace rookery::test {

inline constexpr const char *kLabRouterLan = "10.231.0.1";
inline constexpr const char *kLabHostLan = "10.231.0.2";
inline constexpr const char *kLabExternal = "198.51.101.7";

/// Why namespaces cannot be made here, or empty when they can.
inline QString netnsUnavailable()
{
    if (geteuid() != 0)
        return QStringLiteral("not root: network namespaces (ip netns) need root");
    if (runProgram(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("list")}, nullptr, nullptr,
                   std::chrono::seconds(10)) != 0)
        return QStringLiteral("`ip netns` is unavailable (iproute2 missing or no namespace support)");
    if (access("/usr/sbin/miniupnpd", X_OK) != 0)
        return QStringLiteral("/usr/sbin/miniupnpd is missing (apt-get install miniupnpd-nftables)");
    if (runProgram(QStringLiteral("nft"), {QStringLiteral("--version")}) != 0)
        return QStringLiteral("nft is missing (apt-get install nftables)");
    return {};
}

/// Puts the calling thread into a named network namespace until destroyed. Threads
/// started meanwhile stay there. Use it on the main thread: /proc/net (where libnatpmp
/// reads the default route) shows the main thread's namespace.
class NetnsScope
{
public:
    explicit NetnsScope(const QString &name)
    {
        m_home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        const int fd = open(("/var/run/netns/" + name.toStdString()).c_str(), O_RDONLY | O_CLOEXEC);
        m_entered = m_home >= 0 && fd >= 0 && setns(fd, CLONE_NEWNET) == 0;
        if (fd >= 0)
            close(fd);
    }
    ~NetnsScope()
    {
        if (m_entered)
            setns(m_home, CLONE_NEWNET);
        if (m_home >= 0)
            close(m_home);
    }
    NetnsScope(const NetnsScope &) = delete;
    NetnsScope &operator=(const NetnsScope &) = delete;
    bool entered() const { return m_entered; }

private:
    int m_home = -1;
    bool m_entered = false;
};

/// The two namespaces, their links, the router's nftables and (optionally) miniupnpd.
/// Everything is removed by the destructor, whatever state setup reached.
class NetnsLab
{
public:
    struct Options
    {
        bool daemon = true;
        bool upnp = true;
        bool natPmp = true;
    };

    explicit NetnsLab(Options options)
    {
        static int serial = 0;
        const QString base = QStringLiteral("rk-pm-%1-%2").arg(getpid()).arg(++serial);
        m_router = base + "-r";
        m_host = base + "-h";
        m_error = setUp(options);
    }
    ~NetnsLab()
    {
        stopDaemon();
        for (const QString &ns : {m_host, m_router})
            ip({"netns", "del", ns});
    }
    NetnsLab(const NetnsLab &) = delete;
    NetnsLab &operator=(const NetnsLab &) = delete;

    /// Empty when the lab is up.
    const QString &error() const { return m_error; }
    const QString &router() const { return m_router; }
    const QString &host() const { return m_host; }

    /// Runs a command inside the router namespace; its exit code (-1: did not finish).
    int inRouter(const QStringList &command, QString *out = nullptr) const
    {
        QString err;
        const int rc =
            runProgram("ip", QStringList{"netns", "exec", m_router} + command, out, &err, std::chrono::seconds(10));
        if (out)
            *out += err;
        return rc;
    }

    /// miniupnpd's redirections (the DNAT rules it keeps in its nftables chain).
    QString redirections() const
    {
        QString out;
        inRouter({"nft", "list", "chain", "inet", "filter", "prerouting_miniupnpd"}, &out);
        return out;
    }

    /// What miniupnpd logged so far, for failure messages.
    QString daemonLog() const
    {
        QFile f(m_dir.filePath("miniupnpd.log"));
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    }

private:
    static int ip(const QStringList &args)
    {
        return runProgram("ip", args, nullptr, nullptr, std::chrono::seconds(10));
    }

    QString setUp(const Options &options)
    {
        if (!m_dir.isValid())
            return "no temporary directory";
        const QString r = m_router, h = m_host;
        const QList<QStringList> steps{
            {"netns", "add", r},
            {"netns", "add", h},
            // Both veth pairs are made inside the namespaces: nothing appears outside.
            {"-n", r, "link", "add", "lan0", "type", "veth", "peer", "name", "lan1", "netns", h},
            {"-n", r, "link", "add", "wan0", "type", "veth", "peer", "name", "wan1"},
            {"-n", r, "addr", "add", QString(kLabRouterLan) + "/24", "dev", "lan0"},
            {"-n", r, "addr", "add", QString(kLabExternal) + "/24", "dev", "wan0"},
            {"-n", h, "addr", "add", QString(kLabHostLan) + "/24", "dev", "lan1"},
            {"-n", r, "link", "set", "lo", "up"},
            {"-n", r, "link", "set", "lan0", "up"},
            {"-n", r, "link", "set", "wan0", "up"},
            {"-n", r, "link", "set", "wan1", "up"},
            {"-n", h, "link", "set", "lo", "up"},
            {"-n", h, "link", "set", "lan1", "up"},
            {"-n", h, "route", "add", "default", "via", kLabRouterLan},
        };
        for (const QStringList &step : steps) {
            if (ip(step) != 0)
                return "ip " + step.join(' ') + " failed";
        }
        // The tables and chains miniupnpd 2.3 (nftables) expects by default, as
        // /etc/miniupnpd/nft_init.sh makes them, but in the router namespace only.
        const QString rules = m_dir.filePath("router.nft");
        if (!writeFile(rules, "table inet filter {\n"
                              "  chain miniupnpd { }\n"
                              "  chain prerouting_miniupnpd { }\n"
                              "  chain postrouting_miniupnpd { }\n"
                              "  chain forward { type filter hook forward priority 0; policy drop; jump miniupnpd; }\n"
                              "  chain prerouting { type nat hook prerouting priority -100; policy accept;"
                              " jump prerouting_miniupnpd; }\n"
                              "  chain postrouting { type nat hook postrouting priority 100; policy accept;"
                              " jump postrouting_miniupnpd; }\n"
                              "}\n"))
            return "cannot write " + rules;
        QString out;
        if (inRouter({"nft", "-f", rules}, &out) != 0)
            return "nft -f failed in the router namespace: " + out;
        return options.daemon ? startDaemon(options) : QString();
    }

    QString startDaemon(const Options &options)
    {
        const QString conf = m_dir.filePath("miniupnpd.conf");
        const QString config = QStringLiteral("ext_ifname=wan0\nlistening_ip=lan0\nport=0\n") +
                               "enable_upnp=" + (options.upnp ? "yes" : "no") +
                               "\nenable_natpmp=" + (options.natPmp ? "yes" : "no") +
                               "\nsecure_mode=yes\nsystem_uptime=yes\n"
                               "uuid=3f1e6a52-7c1b-4c8e-9a57-5d2c0b9e1a11\n"
                               "allow 20000-20100 10.231.0.0/24 20000-20100\n"
                               "deny 0-65535 0.0.0.0/0 0-65535\n";
        if (!writeFile(conf, config))
            return "cannot write " + conf;
        const std::string log = m_dir.filePath("miniupnpd.log").toStdString();
        const std::string args[] = {"ip",
                                    "netns",
                                    "exec",
                                    m_router.toStdString(),
                                    "/usr/sbin/miniupnpd",
                                    "-d", // foreground, log to stderr
                                    "-f",
                                    conf.toStdString(),
                                    "-P", // not /var/run/miniupnpd.pid
                                    m_dir.filePath("miniupnpd.pid").toStdString()};
        char *argv[std::size(args) + 1] = {};
        for (size_t i = 0; i < std::size(args); ++i)
            argv[i] = const_cast<char *>(args[i].c_str());
        posix_spawn_file_actions_t files;
        posix_spawn_file_actions_init(&files);
        posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&files, 2, 1);
        const int rc = posix_spawnp(&m_daemon, "ip", &files, nullptr, argv, environ);
        posix_spawn_file_actions_destroy(&files);
        if (rc != 0) {
            m_daemon = -1;
            return "cannot start miniupnpd";
        }
        // Ready once its last socket is open: NAT-PMP's when on, else the HTTP one.
        const QString ready = options.natPmp ? "Listening for NAT-PMP" : "HTTP listening on port";
        if (!waitFor([&] { return daemonLog().contains(ready) || !daemonRunning(); }, std::chrono::seconds(10)) ||
            !daemonRunning())
            return "miniupnpd did not come up:\n" + daemonLog();
        return {};
    }

    bool daemonRunning()
    {
        if (m_daemon <= 0)
            return false;
        if (waitpid(m_daemon, nullptr, WNOHANG) == m_daemon)
            m_daemon = -1;
        return m_daemon > 0;
    }

    void stopDaemon()
    {
        if (!daemonRunning())
            return;
        kill(m_daemon, SIGTERM);
        if (!waitFor([&] { return !daemonRunning(); }, std::chrono::seconds(3))) {
            kill(m_daemon, SIGKILL);
            waitpid(m_daemon, nullptr, 0);
            m_daemon = -1;
        }
    }

    static bool writeFile(const QString &path, const QString &text)
    {
        QFile f(path);
        return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text.toUtf8()) == text.toUtf8().size();
    }

    QTemporaryDir m_dir;
    QString m_router;
    QString m_host;
    QString m_error;
    pid_t m_daemon = -1;
};

} // namespace rookery::test
