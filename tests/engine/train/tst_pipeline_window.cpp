// SPDX-License-Identifier: GPL-3.0-or-later
// The root's window sizing, a pure function, against hand-computed cases.
#include <QtTest>

#include "engine/train/pipeline_window.h"

using namespace rookery::train;

class TstPipelineWindow : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sizesTheWindow_data()
    {
        QTest::addColumn<double>("rttMs");
        QTest::addColumn<double>("sumMs");
        QTest::addColumn<double>("bottleneckMs");
        QTest::addColumn<int>("stages");
        QTest::addColumn<int>("cap");
        QTest::addColumn<int>("window");
        // Loopback, balanced stages: the whole trip is 2 stage times, the floor S + 1 wins.
        QTest::newRow("loopback 2 stages") << 0.2 << 4.0 << 2.0 << 2 << 8 << 3;
        // (10 + 4) / 2 = 7: exactly 7, not 8.
        QTest::newRow("10 ms, exact") << 10.0 << 4.0 << 2.0 << 2 << 16 << 7;
        // (11 + 4) / 2 = 7.5 -> 8.
        QTest::newRow("11 ms, rounds up") << 11.0 << 4.0 << 2.0 << 2 << 16 << 8;
        // 100 ms round trip, 2 ms stages: 52 needed, capped at 8.
        QTest::newRow("100 ms, capped") << 100.0 << 4.0 << 2.0 << 2 << 8 << 8;
        QTest::newRow("100 ms, cap 64") << 100.0 << 4.0 << 2.0 << 2 << 64 << 52;
        // A slow middle stage is the bottleneck: (20 + 1 + 6 + 1) / 6 = 4.67 -> 5.
        QTest::newRow("slow middle") << 20.0 << 8.0 << 6.0 << 3 << 8 << 5;
        // 4 stages: floor 5 even when less would do.
        QTest::newRow("4 stages floor") << 0.0 << 4.0 << 1.0 << 4 << 8 << 5;
        // A cap below the floor is ignored: S + 1 always.
        QTest::newRow("cap below floor") << 100.0 << 4.0 << 2.0 << 3 << 2 << 4;
        // No measurement yet: the floor.
        QTest::newRow("unmeasured") << 0.0 << 0.0 << 0.0 << 2 << 8 << 3;
        // Negative inputs (a clock oddity) count as 0.
        QTest::newRow("negative rtt") << -5.0 << 4.0 << 2.0 << 2 << 8 << 3;
    }

    void sizesTheWindow()
    {
        QFETCH(double, rttMs);
        QFETCH(double, sumMs);
        QFETCH(double, bottleneckMs);
        QFETCH(int, stages);
        QFETCH(int, cap);
        QFETCH(int, window);
        QCOMPARE(pipelineWindow({rttMs / 1000, sumMs / 1000, bottleneckMs / 1000, stages, cap}), window);
    }

    // The root's measurements: the shortest trip, and the median gap between arrivals as
    // the bottleneck once there are five.
    void sizerMeasuresTripsAndGaps()
    {
        using namespace std::chrono_literals;
        WindowSizer w;
        const auto t0 = WindowSizer::Clock::time_point{};
        QCOMPARE(w.size(3, 0.010, 2, 8), 3); // nothing measured: the loopback window
        w.sent(t0);
        w.arrived(t0 + 100ms);               // a 100 ms trip; the root's own 10 ms is the bottleneck
        QCOMPARE(w.size(3, 0.010, 2, 8), 8); // (100 + 10) / 10 = 11, capped at 8
        QCOMPARE(w.size(3, 0.010, 2, 2), 3); // a cap below the loopback window is ignored
        for (int i = 1; i <= 5; ++i)
            w.arrived(t0 + 100ms + i * 50ms); // arrivals 50 ms apart: the link is the bottleneck
        QCOMPARE(w.size(3, 0.010, 2, 8), 3);  // (100 + 10) / 50 = 2.2 -> 3
        w.reset();
        QCOMPARE(w.size(3, 0.010, 2, 8), 3);
    }
};

QTEST_APPLESS_MAIN(TstPipelineWindow)
#include "tst_pipeline_window.moc"
