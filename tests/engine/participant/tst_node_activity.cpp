// SPDX-License-Identifier: GPL-3.0-or-later
// What a node's heartbeats say it is doing: a volunteer whose governor holds the work
// (paused, snoozed, on battery, outside its schedule, user active) is paused, whatever
// its stage was doing when the gate closed.
#include <QtTest>

#include "engine/participant/node_activity.h"

using namespace rookery;
using namespace rookery::participant;
using Phase = AssignedStage::Phase;
using device::GovernorState;

class TestNodeActivity : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aHeldGovernorIsPaused()
    {
        for (Phase p : {Phase::Waiting, Phase::Training, Phase::Finishing, Phase::Failed})
            QCOMPARE(nodeActivity(p, GovernorState::Paused), coord::NodeActivity::Paused);
    }

    void otherwiseTheStageSays()
    {
        for (GovernorState g : {GovernorState::Running, GovernorState::Throttled}) {
            QCOMPARE(nodeActivity(Phase::Training, g), coord::NodeActivity::Training);
            QCOMPARE(nodeActivity(Phase::Finishing, g), coord::NodeActivity::Training);
            QCOMPARE(nodeActivity(Phase::Failed, g), coord::NodeActivity::Failed);
            QCOMPARE(nodeActivity(Phase::Waiting, g), coord::NodeActivity::Waiting);
        }
    }
};

QTEST_GUILESS_MAIN(TestNodeActivity)
#include "tst_node_activity.moc"
