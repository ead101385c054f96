// SPDX-License-Identifier: GPL-3.0-or-later
// The desktop's join steps from the node's join state and the coordinator's verdict:
// each step's state as joining goes on, and failures said in plain words with what to do.
#include <QtTest>

#include "engine/host/join_steps.h"

using namespace rookery;
using participant::JoinState;

namespace {

const std::string kWhere = "198.51.101.1:7400";

std::vector<std::string> states(const std::vector<host::JoinStepView> &steps)
{
    std::vector<std::string> out;
    for (const auto &s : steps)
        out.push_back(s.state);
    return out;
}

using States = std::vector<std::string>;

} // namespace

class TestJoinSteps : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void stepsFollowTheJoin()
    {
        JoinState j;
        auto steps = host::joinSteps(j, {}, kWhere);
        QCOMPARE(steps.size(), size_t(4));
        QCOMPARE(steps[0].step, std::string("connect"));
        QCOMPARE(steps[3].step, std::string("assign"));
        QCOMPARE(states(steps), (States{"working", "pending", "pending", "pending"}));
        QVERIFY(steps[0].text.find(kWhere) != std::string::npos);

        j.connected = true;
        QCOMPARE(states(host::joinSteps(j, {}, kWhere)), (States{"done", "working", "pending", "pending"}));

        j.registered = true;
        j.waiting = "waiting: 1 of 2 volunteers are here";
        steps = host::joinSteps(j, {"checking", ""}, kWhere);
        QCOMPARE(states(steps), (States{"done", "done", "working", "working"}));
        QCOMPARE(steps[3].text, j.waiting);

        steps = host::joinSteps(j, {"direct", "reached at 198.51.101.10:40100"}, kWhere);
        QCOMPARE(steps[2].state, std::string("done"));
        QVERIFY(steps[2].text.find("198.51.101.10:40100") != std::string::npos);

        j.placement = "stage 1 of 2 in cluster 1 of 1";
        steps = host::joinSteps(j, {"unreachable", "timed out"}, kWhere);
        QCOMPARE(states(steps), (States{"done", "done", "relayed", "done"}));
        QVERIFY(steps[2].text.find("relay") != std::string::npos);
        QVERIFY(steps[2].text.find("timed out") != std::string::npos);
        QCOMPARE(steps[3].text, j.placement);
    }

    void aFailedConnectionSaysWhatToDo()
    {
        JoinState j;
        j.connectProblem = "Connection refused";
        auto steps = host::joinSteps(j, {}, kWhere);
        QCOMPARE(steps[0].state, std::string("failed"));
        QVERIFY2(steps[0].text.find("nothing answers at " + kWhere) != std::string::npos, steps[0].text.c_str());
        QVERIFY2(steps[0].text.find("Retrying") != std::string::npos, steps[0].text.c_str());
        QCOMPARE(steps[1].state, std::string("pending"));

        // A certificate that is not the pinned one: no retry, and what to do.
        j.connectProblem = "cannot reach the coordinator: TLS handshake: the certificate's fingerprint sha256=ab is "
                           "not the pinned sha256=cd";
        j.gaveUp = true;
        steps = host::joinSteps(j, {}, kWhere);
        QCOMPARE(steps[0].state, std::string("failed"));
        QVERIFY2(steps[0].text.find("join string") != std::string::npos, steps[0].text.c_str());
        QVERIFY2(steps[0].text.find("Retrying") == std::string::npos, steps[0].text.c_str());
        QVERIFY2(steps[0].text.find("stopped") != std::string::npos, steps[0].text.c_str());
    }

    void aRefusalIsTheRegistrationStep()
    {
        JoinState j;
        j.connected = true;
        j.registerProblem = "the registration nonce was seen before";
        j.gaveUp = true;
        const auto steps = host::joinSteps(j, {}, kWhere);
        QCOMPARE(states(steps), (States{"done", "failed", "pending", "pending"}));
        QVERIFY(steps[1].text.find("refused") != std::string::npos);
    }

    void plainWordsForWhatTheNetworkSays()
    {
        const std::pair<const char *, const char *> cases[] = {
            {"connect: Connection refused", "connection refused"},
            {"connect: Operation timed out", "timed out"},
            {"resolve: Host not found (authoritative)", "check the host name"},
            {"connect: Network is unreachable", "online"},
            {"the peer speaks protocol version 9", "update Rookery"},
        };
        for (const auto &[reason, expected] : cases) {
            const std::string plain = host::plainConnectProblem(reason, kWhere);
            QVERIFY2(plain.find(expected) != std::string::npos, (std::string(reason) + " -> " + plain).c_str());
            QVERIFY2(plain.find(kWhere) != std::string::npos, plain.c_str());
        }
        // Anything else is passed on as it is.
        const std::string other = host::plainConnectProblem("something odd", kWhere);
        QVERIFY(other.find("something odd") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestJoinSteps)
#include "tst_join_steps.moc"
