// SPDX-License-Identifier: GPL-3.0-or-later
// The logind idle source against a fake logind on a private D-Bus daemon: sd-bus
// honours DBUS_SYSTEM_BUS_ADDRESS, so the real code talks to the fake unchanged.
#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include <atomic>
#include <thread>

#include <systemd/sd-bus.h>
#include <time.h>

#include "engine/device/idle_source.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

uint64_t monotonicUs()
{
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return uint64_t(now.tv_sec) * 1'000'000 + uint64_t(now.tv_nsec) / 1000;
}

// org.freedesktop.login1.Manager with just the two idle properties, on its own thread.
class FakeLogind
{
public:
    std::atomic<bool> idleHint{false};
    std::atomic<uint64_t> idleSinceUs{0};

    explicit FakeLogind(const std::string &address)
    {
        sd_bus_new(&m_bus);
        sd_bus_set_address(m_bus, address.c_str());
        sd_bus_set_bus_client(m_bus, 1);
        m_ok = sd_bus_start(m_bus) >= 0 &&
               sd_bus_add_object_vtable(m_bus, nullptr, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                        kVtable, this) >= 0 &&
               sd_bus_request_name(m_bus, "org.freedesktop.login1", 0) >= 0;
        m_thread = std::thread([this] {
            while (!m_quit) {
                while (sd_bus_process(m_bus, nullptr) > 0) { }
                sd_bus_wait(m_bus, 20'000);
            }
        });
    }
    ~FakeLogind()
    {
        m_quit = true;
        m_thread.join();
        sd_bus_flush_close_unref(m_bus);
    }
    bool ok() const { return m_ok; }

private:
    static int getHint(sd_bus *, const char *, const char *, const char *, sd_bus_message *reply, void *self,
                       sd_bus_error *)
    {
        return sd_bus_message_append(reply, "b", int(static_cast<FakeLogind *>(self)->idleHint.load()));
    }
    static int getSince(sd_bus *, const char *, const char *, const char *, sd_bus_message *reply, void *self,
                        sd_bus_error *)
    {
        return sd_bus_message_append(reply, "t", static_cast<FakeLogind *>(self)->idleSinceUs.load());
    }
    static inline const sd_bus_vtable kVtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("IdleHint", "b", getHint, 0, 0),
        SD_BUS_PROPERTY("IdleSinceHintMonotonic", "t", getSince, 0, 0),
        SD_BUS_VTABLE_END,
    };

    sd_bus *m_bus = nullptr;
    bool m_ok = false;
    std::atomic<bool> m_quit{false};
    std::thread m_thread;
};

} // namespace

class TestLogindIdleSource : public QObject
{
    Q_OBJECT

    QProcess m_daemon;
    std::string m_address;

private Q_SLOTS:
    void initTestCase()
    {
        const QString daemon = QStandardPaths::findExecutable("dbus-daemon");
        if (daemon.isEmpty())
            QSKIP("dbus-daemon is not installed");
        m_daemon.start(daemon, {"--session", "--nofork", "--print-address"});
        QVERIFY(m_daemon.waitForStarted());
        QVERIFY(m_daemon.waitForReadyRead(10000));
        m_address = m_daemon.readLine().trimmed().toStdString();
        QVERIFY(!m_address.empty());
    }

    void cleanupTestCase()
    {
        m_daemon.terminate();
        m_daemon.waitForFinished(5000);
    }

    void noBusMeansNoSource()
    {
        qputenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/rookery-test-bus");
        QVERIFY(device::makeLogindIdleSource() == nullptr);
    }

    void busWithoutLogindMeansNoSource()
    {
        qputenv("DBUS_SYSTEM_BUS_ADDRESS", QByteArray::fromStdString(m_address));
        QVERIFY(device::makeLogindIdleSource() == nullptr);
    }

    void readsIdleHintAndSince()
    {
        FakeLogind logind(m_address);
        QVERIFY(logind.ok());
        qputenv("DBUS_SYSTEM_BUS_ADDRESS", QByteArray::fromStdString(m_address));
        auto source = device::makeSystemIdleSource(); // logind comes first
        QVERIFY(source != nullptr);
        QCOMPARE(source->name(), std::string("logind IdleHint"));
        QCOMPARE(source->idleTime().value(), 0ms); // hint not set: the user is active

        logind.idleSinceUs = monotonicUs() - 7 * 60 * 1'000'000ull;
        logind.idleHint = true;
        const auto idle = source->idleTime().value();
        QVERIFY2(idle >= 7min && idle < 7min + 30s, std::to_string(idle.count()).c_str());

        logind.idleHint = false;
        QCOMPARE(source->idleTime().value(), 0ms);
    }
};

QTEST_APPLESS_MAIN(TestLogindIdleSource)
#include "tst_logind_idle_source.moc"
