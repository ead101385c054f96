// SPDX-License-Identifier: GPL-3.0-or-later
// heartbeatPace and silenceLimit: the heartbeat interval a swarm of a given size is told,
// and how long a node may then stay silent.
#include <QtTest>

#include "engine/coord/heartbeat_pace.h"

using namespace rookery::coord;
using namespace std::chrono_literals;

class TestHeartbeatPace : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void smallSwarmsKeepTheBaseInterval()
    {
        QCOMPARE(heartbeatPace(1000ms, 0, 2000), 1000ms);
        QCOMPARE(heartbeatPace(1000ms, 1, 2000), 1000ms);
        QCOMPARE(heartbeatPace(1000ms, 2000, 2000), 1000ms); // exactly the budget
    }

    void largeSwarmsAreToldALongerIntervalInHalfSeconds()
    {
        QCOMPARE(heartbeatPace(1000ms, 2001, 2000), 1500ms); // just over: the next half second
        QCOMPARE(heartbeatPace(1000ms, 3000, 2000), 1500ms);
        QCOMPARE(heartbeatPace(1000ms, 10'000, 2000), 5000ms);
        QCOMPARE(heartbeatPace(1000ms, 10'100, 2000), 5500ms);
        QCOMPARE(heartbeatPace(100ms, 3, 20), 500ms); // 150 ms, rounded up
        // A swarm that grows by a node does not retell everyone.
        QCOMPARE(heartbeatPace(1000ms, 9'001, 2000), heartbeatPace(1000ms, 9'999, 2000));
    }

    void theIntervalHasACeiling()
    {
        QCOMPARE(heartbeatPace(1000ms, 1'000'000, 2000), 20'000ms);
        QCOMPARE(heartbeatPace(25'000ms, 10, 2000), 25'000ms); // an operator's own choice stands
    }

    void aZeroBudgetKeepsTheBaseAtAnySize()
    {
        QCOMPARE(heartbeatPace(1000ms, 1'000'000, 0), 1000ms);
        QCOMPARE(heartbeatPace(1000ms, 1'000'000, -5), 1000ms);
    }

    void silenceIsTheTimeoutOrThreeIntervals()
    {
        QCOMPARE(silenceLimit(5000ms, 1000ms), 5000ms);
        QCOMPARE(silenceLimit(5000ms, 0ms), 5000ms); // never told: the timeout
        QCOMPARE(silenceLimit(5000ms, 5000ms), 15'000ms);
        QCOMPARE(silenceLimit(600ms, 500ms), 1500ms);
    }
};

QTEST_APPLESS_MAIN(TestHeartbeatPace)
#include "tst_heartbeat_pace.moc"
