// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <atomic>
#include <future>
#include <thread>

#include "engine/common/error.h"
#include "engine/train/in_process_transport.h"

using namespace rookery;
using namespace std::chrono_literals;
using train::BackwardMessage;
using train::ForwardMessage;
using train::StageMessage;
using train::StopKind;
using train::StopMessage;

namespace {

ForwardMessage forward(int64_t id)
{
    ForwardMessage m;
    m.microbatch = id;
    m.activations = tensorBufferFromBytes(DType::Float32, {1, 2}, std::vector<uint8_t>(8, uint8_t(id)));
    return m;
}

int64_t idOf(const StageMessage &m)
{
    if (auto *f = std::get_if<ForwardMessage>(&m))
        return f->microbatch;
    if (auto *b = std::get_if<BackwardMessage>(&m))
        return b->microbatch;
    return -1;
}

} // namespace

class TestInProcessTransport : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void backwardBeforeForward()
    {
        train::InProcessTransport t(3, 4);
        QVERIFY(t.endpoint(0).sendForward(forward(1)));
        QVERIFY(t.endpoint(2).sendBackward({7, {}}));
        auto first = t.endpoint(1).receive();
        QVERIFY(std::holds_alternative<BackwardMessage>(first));
        QCOMPARE(idOf(first), int64_t(7));
        auto second = t.endpoint(1).receive();
        QVERIFY(std::holds_alternative<ForwardMessage>(second));
        QCOMPARE(idOf(second), int64_t(1));
        QVERIFY(!t.endpoint(1).poll());
    }

    void forwardsInOrderThenFinished()
    {
        train::InProcessTransport t(2, 4);
        auto &root = t.endpoint(0);
        const auto message = forward(0);
        const uint8_t *bytes = message.activations.data;
        QVERIFY(root.sendForward(message));
        QVERIFY(root.sendForward(forward(1)));
        QVERIFY(root.sendFinished());
        auto m0 = t.endpoint(1).receive();
        QCOMPARE(idOf(m0), int64_t(0));
        QCOMPARE(std::get<ForwardMessage>(m0).activations.data, bytes); // passed by reference, not copied
        QCOMPARE(idOf(t.endpoint(1).receive()), int64_t(1));
        auto end = t.endpoint(1).receive();
        QVERIFY(std::holds_alternative<StopMessage>(end));
        QCOMPARE(std::get<StopMessage>(end).kind, StopKind::Finished);
        QVERIFY(!t.aborted());
    }

    void fullQueueBlocksTheSenderUntilThereIsRoom()
    {
        train::InProcessTransport t(2, 2);
        QVERIFY(t.endpoint(0).sendForward(forward(0)));
        QVERIFY(t.endpoint(0).sendForward(forward(1)));
        std::atomic<bool> sent{false};
        auto third = std::async(std::launch::async, [&] {
            const bool ok = t.endpoint(0).sendForward(forward(2));
            sent = true;
            return ok;
        });
        QVERIFY(third.wait_for(100ms) == std::future_status::timeout);
        QVERIFY(!sent);
        QCOMPARE(idOf(t.endpoint(1).receive()), int64_t(0));
        QVERIFY(third.wait_for(10s) == std::future_status::ready);
        QVERIFY(third.get());
        QCOMPARE(idOf(t.endpoint(1).receive()), int64_t(1));
        QCOMPARE(idOf(t.endpoint(1).receive()), int64_t(2));
    }

    void abortWakesEveryoneAndTheFirstReasonWins()
    {
        train::InProcessTransport t(3, 1);
        QVERIFY(t.endpoint(1).sendForward(forward(0))); // stage 2's queue is now full
        auto receiver = std::async(std::launch::async, [&] { return t.endpoint(0).receive(); });
        auto sender = std::async(std::launch::async, [&] { return t.endpoint(1).sendForward(forward(1)); });
        QVERIFY(receiver.wait_for(100ms) == std::future_status::timeout);
        QVERIFY(sender.wait_for(10ms) == std::future_status::timeout);
        t.endpoint(2).abort({StopKind::Failed, 2, "stage 2 broke"});
        t.abort({StopKind::Cancelled, -1, "too late"});
        QVERIFY(receiver.wait_for(10s) == std::future_status::ready);
        QVERIFY(sender.wait_for(10s) == std::future_status::ready);
        const auto stop = std::get<StopMessage>(receiver.get());
        QCOMPARE(stop.kind, StopKind::Failed);
        QCOMPARE(stop.reason, std::string("stage 2 broke"));
        QVERIFY(!sender.get());
        // From now on everything fails at once, with the same reason, even with messages queued.
        QVERIFY(!t.endpoint(0).sendForward(forward(3)));
        QVERIFY(!t.endpoint(2).sendBackward({0, {}}));
        QVERIFY(!t.endpoint(0).sendFinished());
        QCOMPARE(std::get<StopMessage>(t.endpoint(2).receive()).reason, std::string("stage 2 broke"));
        QCOMPARE(std::get<StopMessage>(*t.endpoint(1).poll()).stage, 2);
        QCOMPARE(t.aborted()->reason, std::string("stage 2 broke"));
    }

    void sendingPastTheEndsIsAnError()
    {
        train::InProcessTransport t(2, 2);
        QVERIFY_THROWS_EXCEPTION(Error, t.endpoint(0).sendBackward({0, {}}));
        QVERIFY_THROWS_EXCEPTION(Error, t.endpoint(1).sendForward(forward(0)));
        QVERIFY_THROWS_EXCEPTION(Error, t.endpoint(1).sendFinished());
        QVERIFY_THROWS_EXCEPTION(Error, t.endpoint(2));
        QVERIFY_THROWS_EXCEPTION(Error, train::InProcessTransport(0, 1));
    }

    // Many messages both ways between threads, as a pipeline would send them.
    void manyMessagesBetweenThreads()
    {
        constexpr int64_t kCount = 20000;
        train::InProcessTransport t(2, 3);
        auto leaf = std::async(std::launch::async, [&] {
            int64_t expected = 0;
            for (;;) {
                auto m = t.endpoint(1).receive();
                if (std::holds_alternative<StopMessage>(m))
                    return expected;
                if (idOf(m) != expected++)
                    return int64_t(-1);
                if (!t.endpoint(1).sendBackward({idOf(m), {}}))
                    return int64_t(-2);
            }
        });
        int64_t sent = 0, back = 0;
        while (back < kCount) {
            if (sent < kCount && sent - back < 3) {
                QVERIFY(t.endpoint(0).sendForward(forward(sent++)));
                continue;
            }
            QCOMPARE(idOf(t.endpoint(0).receive()), back++);
        }
        QVERIFY(t.endpoint(0).sendFinished());
        QVERIFY(leaf.wait_for(30s) == std::future_status::ready);
        QCOMPARE(leaf.get(), kCount);
    }
};

QTEST_APPLESS_MAIN(TestInProcessTransport)
#include "tst_in_process_transport.moc"
