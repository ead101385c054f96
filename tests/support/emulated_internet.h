// SPDX-License-Identifier: GPL-3.0-or-later
// A small internet in network namespaces, for tests of nodes at home behind NAT: a
// public segment (a bridge) with the coordinator, and two home routers on it that
// masquerade their LAN with nftables, each with two home machines behind it on a LAN
// bridge. Router A runs miniupnpd (UPnP IGD and NAT-PMP), router B none; both cap their
// uplink with tbf. Neither router forwards from its LAN to its own WAN address's mapped
// ports ("hairpin NAT"): miniupnpd's nftables rules match only packets that come in on
// the WAN interface, and the test checks that as a fact (canConnect()).
// Needs root, `ip netns`, nft, tc and miniupnpd; nothing touches the machine's own
// network, and everything is removed when the object goes.
#pragma once

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <sys/types.h>

namespace rookery::test {

// The addresses. Why 198.51.101.0/24: it is ordinary (not reserved) IPv4 space, so
// miniupnpd 2.3 agrees to map ports on router A's WAN address; it refuses on reserved
// ranges, the documentation ones (198.51.100.0/24 ...) and 100.64.0.0/10 included, with
// "Port forwarding is impossible". The packets never leave the namespaces made here,
// so nobody who owns those addresses sees them.
namespace internet {
inline constexpr const char *kCoordinator = "198.51.101.1"; ///< on the public bridge
inline constexpr const char *kRouterAWan = "198.51.101.10";
inline constexpr const char *kRouterALan = "10.77.1.1";
inline constexpr const char *kHomeA1 = "10.77.1.2";
inline constexpr const char *kHomeA2 = "10.77.1.3";
inline constexpr const char *kRouterBWan = "198.51.101.20";
inline constexpr const char *kRouterBLan = "10.77.2.1";
inline constexpr const char *kHomeB1 = "10.77.2.2";
inline constexpr const char *kHomeB2 = "10.77.2.3";
inline constexpr const char *kUplinkRate = "50mbit"; ///< tbf on each router's WAN egress
} // namespace internet

/// Why the emulated internet cannot be built here (not root, a tool missing), or empty.
QString emulatedInternetUnavailable();

/// In a test function: where the emulated internet cannot be built, skips (with
/// ROOKERY_SKIP_NETNS=1) or fails, saying why.
#define ROOKERY_REQUIRE_EMULATED_INTERNET()                                                                            \
    do {                                                                                                               \
        if (const QString why_ = ::rookery::test::emulatedInternetUnavailable(); !why_.isEmpty()) {                    \
            if (qgetenv("ROOKERY_SKIP_NETNS") == "1")                                                                  \
                QSKIP(qPrintable(why_));                                                                               \
            QFAIL(qPrintable(why_ + " (set ROOKERY_SKIP_NETNS=1 to skip)"));                                           \
        }                                                                                                              \
    } while (false)

/// One program run inside a namespace (`ip netns exec NS program ...`), stdout and
/// stderr into a file. It dies with the test process (PR_SET_PDEATHSIG), so a crashed
/// or killed test leaves no program behind.
class NetnsProcess
{
public:
    NetnsProcess(const QString &ns, const QString &program, const QStringList &args, const QString &logPath);
    ~NetnsProcess() { stop(std::chrono::seconds(10)); }
    NetnsProcess(const NetnsProcess &) = delete;
    NetnsProcess &operator=(const NetnsProcess &) = delete;

    bool running();
    /// SIGTERM, then SIGKILL after `grace`. Its exit code; -1 when a signal ended it.
    int stop(std::chrono::milliseconds grace);
    /// What it printed so far.
    QString output() const;
    pid_t pid() const { return m_pid; }

private:
    pid_t m_pid = -1;
    int m_exitCode = -1;
    QString m_log;
};

class EmulatedInternet
{
public:
    enum class Site { Public, RouterA, RouterB, HomeA1, HomeA2, HomeB1, HomeB2 };

    EmulatedInternet();
    ~EmulatedInternet(); ///< stops every process started here, then deletes the namespaces
    EmulatedInternet(const EmulatedInternet &) = delete;
    EmulatedInternet &operator=(const EmulatedInternet &) = delete;

    /// Empty when everything is up; otherwise the step that failed.
    const QString &error() const { return m_error; }
    QString ns(Site site) const;
    /// A temporary directory for logs and data directories; removed at the end.
    QString filePath(const QString &name) const { return m_dir.filePath(name); }

    /// Runs a command to completion inside `site`; its exit code (-1: did not finish in 20 s).
    int exec(Site site, const QStringList &command, QString *out = nullptr) const;
    /// Starts a program inside `site`; it is stopped by the destructor at the latest.
    /// Its output goes to filePath(name + ".log").
    NetnsProcess &start(Site site, const QString &name, const QString &program, const QStringList &args);

    /// Starts rookery-coordinator (`program`, an absolute path) on the public segment, with
    /// --data-dir filePath("coordinator") --public-host kCoordinator and `args`, and waits
    /// (up to 30 s) until it listens. Returns its join string, read as an operator does
    /// with `invite`; empty when something failed, and `why` says what.
    QString startCoordinator(const QString &program, const QStringList &args, NetnsProcess **process, QString *why);

    /// Whether a TCP connection from `from` to host:port is accepted within 5 s; `why`
    /// gets the shell's complaint when not.
    bool canConnect(Site from, const QString &host, int port, QString *why = nullptr) const;

    /// miniupnpd's redirections on router A (the DNAT rules in its nftables chain).
    QString redirectionsA() const;
    /// miniupnpd's forwarding rules on router A (its filter chain).
    QString pinholesA() const;
    QString miniupnpdLog() const;
    /// The topology in a few lines, for the test's log.
    QString describe() const;

private:
    QString setUp();
    QString setUpRouter(Site router, const char *wan, const char *lan, std::pair<Site, const char *> home1,
                        std::pair<Site, const char *> home2);
    QString startMiniupnpd();

    QTemporaryDir m_dir;
    QString m_base;
    QString m_error;
    std::vector<QString> m_made; ///< namespaces made so far, to delete
    std::unique_ptr<NetnsProcess> m_miniupnpd;
    std::vector<std::unique_ptr<NetnsProcess>> m_processes;
};

} // namespace rookery::test
