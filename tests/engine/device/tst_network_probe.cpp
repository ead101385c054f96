// SPDX-License-Identifier: GPL-3.0-or-later
// The network probe against a real server on 127.0.0.1.
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/common/error.h"
#include "engine/device/network_probe.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

// A listening socket that never answers: connects succeed, replies never come.
struct SilentListener
{
    int fd = -1;
    uint16_t port = 0;
    SilentListener()
    {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
        listen(fd, 4);
        socklen_t len = sizeof a;
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
        port = ntohs(a.sin_port);
    }
    ~SilentListener() { close(fd); }
};

void expectError(const std::function<void()> &fn, const QString &mentions)
{
    try {
        fn();
        QFAIL("expected rookery::Error");
    } catch (const Error &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(mentions), e.what());
    }
}

} // namespace

class TestNetworkProbe : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void measuresLoopback()
    {
        device::ProbeServer server;
        QVERIFY(server.port() != 0);
        device::NetworkProbeOptions o;
        o.pings = 20;
        o.transferBytes = 4 << 20;
        o.timeout = 20s;
        const auto r = device::probeNetwork("127.0.0.1", server.port(), o);
        QCOMPARE(r.pings, 20);
        QCOMPARE(r.transferBytes, uint64_t(4 << 20));
        QVERIFY(r.rttMinMs > 0);
        QVERIFY(r.rttMinMs <= r.rttMedianMs);
        QVERIFY(r.uploadBytesPerSecond > 0);
        QVERIFY(r.downloadBytesPerSecond > 0);
        // A second probe on the same server works too (one session per probe).
        QCOMPARE(device::probeNetwork("localhost", server.port(), o).pings, 20);
    }

    void pingsOnly()
    {
        device::ProbeServer server;
        device::NetworkProbeOptions o;
        o.pings = 3;
        o.transferBytes = 0;
        const auto r = device::probeNetwork("127.0.0.1", server.port(), o);
        QCOMPARE(r.pings, 3);
        QCOMPARE(r.uploadBytesPerSecond, 0.0);
    }

    void refusedConnectionIsAClearError()
    {
        uint16_t port = 0;
        {
            device::ProbeServer server; // find a port, then free it
            port = server.port();
        }
        expectError([&] { device::probeNetwork("127.0.0.1", port, {}); },
                    "network probe of 127.0.0.1:" + QString::number(port) + " failed");
    }

    void silentPeerTimesOut()
    {
        SilentListener silent;
        device::NetworkProbeOptions o;
        o.timeout = 300ms;
        expectError([&] { device::probeNetwork("127.0.0.1", silent.port, o); }, "did not finish within 300 ms");
    }

    void unknownHostIsAClearError()
    {
        device::NetworkProbeOptions o;
        o.timeout = 10s;
        expectError([&] { device::probeNetwork("no-such-host.invalid", 9, o); },
                    "network probe of no-such-host.invalid:9");
    }

    void serverRefusesABusyPort()
    {
        device::ProbeServer first;
        SilentListener taken;
        expectError([&] { device::ProbeServer second("127.0.0.1", taken.port); }, "probe server cannot listen on");
    }
};

QTEST_APPLESS_MAIN(TestNetworkProbe)
#include "tst_network_probe.moc"
