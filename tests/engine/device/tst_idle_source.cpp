// SPDX-License-Identifier: GPL-3.0-or-later
// The real idle sources: the X screensaver against a private Xvfb, and the fallbacks
// when there is nothing to ask.
#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include <filesystem>

#include "engine/device/idle_source.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

class TestIdleSource : public QObject
{
    Q_OBJECT

    QByteArray m_display;

private Q_SLOTS:
    void initTestCase() { m_display = qgetenv("DISPLAY"); }
    void cleanup()
    {
        if (m_display.isEmpty())
            qunsetenv("DISPLAY");
        else
            qputenv("DISPLAY", m_display);
    }

    void noDisplayMeansNoXSource()
    {
        qunsetenv("DISPLAY");
        QVERIFY(device::makeXScreenSaverIdleSource() == nullptr);
        qputenv("DISPLAY", ":12345"); // no such server
        QVERIFY(device::makeXScreenSaverIdleSource() == nullptr);
    }

    void systemSourceAnswersOrIsAbsent()
    {
        auto source = device::makeSystemIdleSource();
        if (!source)
            return; // nothing to ask here: the governor then counts the user as active
        QVERIFY(!source->name().empty());
        const auto idle = source->idleTime();
        QVERIFY(!idle || *idle >= 0ms);
    }

    void xScreenSaverUnderXvfb()
    {
        const QString xvfb = QStandardPaths::findExecutable("Xvfb");
        if (xvfb.isEmpty())
            QSKIP("Xvfb is not installed (installer/setup.sh installs it)");
        int number = 90;
        while (std::filesystem::exists("/tmp/.X11-unix/X" + std::to_string(number)) && number < 120)
            ++number;
        QProcess server;
        server.start(xvfb, {":" + QString::number(number), "-nolisten", "tcp", "-screen", "0", "320x240x24"});
        QVERIFY(server.waitForStarted());
        const std::string socket = "/tmp/.X11-unix/X" + std::to_string(number);
        const bool up = test::waitFor([&] { return std::filesystem::exists(socket); }, 20s);
        if (up) {
            qputenv("DISPLAY", ":" + QByteArray::number(number));
            // The server may take a moment to accept connections after creating its socket.
            std::unique_ptr<device::IdleSource> source;
            test::waitFor([&] { return (source = device::makeXScreenSaverIdleSource()) != nullptr; }, 10s);
            QVERIFY(source != nullptr);
            QCOMPARE(source->name(), std::string("X screensaver"));
            const auto idle = source->idleTime();
            QVERIFY(idle.has_value());
            QVERIFY(*idle >= 0ms);
        }
        server.terminate();
        server.waitForFinished(5000);
        QVERIFY2(up, "Xvfb did not start");
    }
};

QTEST_APPLESS_MAIN(TestIdleSource)
#include "tst_idle_source.moc"
