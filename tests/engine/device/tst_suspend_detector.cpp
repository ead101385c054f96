// SPDX-License-Identifier: GPL-3.0-or-later
// Noticing that the computer slept: the boot clock runs on through a suspension, the
// monotonic clock does not.
#include <QtTest>

#include "engine/device/suspend_detector.h"

using namespace rookery::device;
using namespace std::chrono_literals;

class TestSuspendDetector : public QObject
{
    Q_OBJECT

    // Both clocks, moved by hand.
    std::chrono::nanoseconds m_monotonic = 1000s, m_boot = 1200s;
    SuspendDetector::Readings readings()
    {
        return [this] { return std::pair{m_monotonic, m_boot}; };
    }

private Q_SLOTS:
    void awakeTimeIsNotSleep()
    {
        SuspendDetector d(readings(), 2s);
        m_monotonic += 30s;
        m_boot += 30s;
        QVERIFY(!d.poll());
    }

    void aSuspensionIsMeasured()
    {
        SuspendDetector d(readings(), 2s);
        m_monotonic += 10s; // awake 10 s, asleep 300 s
        m_boot += 310s;
        const auto slept = d.poll();
        QVERIFY(slept);
        QCOMPARE(slept->count(), 300'000);
        // Counted once: the next poll starts from here.
        m_monotonic += 1s;
        m_boot += 1s;
        QVERIFY(!d.poll());
    }

    void driftUnderTheThresholdIsNotSleep()
    {
        SuspendDetector d(readings(), 2s);
        m_monotonic += 10s;
        m_boot += 11500ms;
        QVERIFY(!d.poll());
    }

    void theRealClocksAgreeWhileAwake()
    {
        SuspendDetector d;
        QTest::qWait(50);
        QVERIFY(!d.poll());
    }
};

QTEST_GUILESS_MAIN(TestSuspendDetector)
#include "tst_suspend_detector.moc"
