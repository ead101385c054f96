// SPDX-License-Identifier: GPL-3.0-or-later
// The WAN emulation (a testing option): its spec parser, and that the wrapped events
// deliver each link's messages late by the delay, in order, spaced by the rate cap,
// with `closed` last. Timing bounds are generous: a 50 ms delay must not be 0 ms and must
// not be seconds; exact figures belong to bench_wan.
#include <QtTest>

#include <atomic>
#include <mutex>
#include <thread>

#include "engine/common/error.h"
#include "engine/net/net_context.h"
#include "engine/net/wan_emulation.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace rookery::net;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// A link that only counts received bytes, as a real one's stats() would.
class FakeLink : public Link
{
public:
    SendResult send(const Message &) override { return SendResult::Queued; }
    void close(const std::string &) override { }
    bool isOpen() const override { return true; }
    PeerInfo peer() const override { return {}; }
    LinkStats stats() const override { return {0, received.load(), 0, 0, 0, 0}; }
    std::string describe() const override { return "fake"; }
    std::atomic<uint64_t> received{0};
};

// What the wrapped events saw, with arrival times.
struct Recorder
{
    std::mutex mutex;
    std::vector<std::pair<uint64_t, Clock::time_point>> messages; // microbatch id, when
    std::vector<size_t> closedAfter;                              // messages seen at close

    LinkEvents events()
    {
        LinkEvents e;
        e.message = [this](const std::shared_ptr<Link> &, Message &&m) {
            std::lock_guard lock(mutex);
            messages.emplace_back(std::get<Activations>(m).microbatchId, Clock::now());
        };
        e.closed = [this](const std::shared_ptr<Link> &, const CloseInfo &) {
            std::lock_guard lock(mutex);
            closedAfter.push_back(messages.size());
        };
        return e;
    }
    size_t count()
    {
        std::lock_guard lock(mutex);
        return messages.size();
    }
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

} // namespace

class TstWanEmulation : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void parsesTheOption()
    {
        const auto c = parseWanEmulation("delay_ms=50,jitter_ms=5,rate_mbit=50");
        QCOMPARE(c.delay, std::chrono::microseconds(50'000));
        QCOMPARE(c.jitter, std::chrono::microseconds(5'000));
        QCOMPARE(c.rateMbit, 50.0);
        QVERIFY(c.enabled());
        QCOMPARE(parseWanEmulation("rate_mbit=2.5").rateMbit, 2.5);
        QVERIFY(!parseWanEmulation("").enabled());
        QVERIFY(!WanEmulationConfig{}.enabled());
        QVERIFY_THROWS_EXCEPTION(Error, parseWanEmulation("delay=50"));
        QVERIFY_THROWS_EXCEPTION(Error, parseWanEmulation("delay_ms=fast"));
        QVERIFY_THROWS_EXCEPTION(Error, parseWanEmulation("delay_ms=-1"));
        QVERIFY_THROWS_EXCEPTION(Error, parseWanEmulation("delay_ms"));
    }

    void offMeansUnchanged()
    {
        NetContext net(1);
        Recorder r;
        const auto e = emulateWan(net, {}, r.events());
        auto link = std::make_shared<FakeLink>();
        e.message(link, Activations{7, 0, {}, {}});
        QCOMPARE(r.count(), size_t(1)); // delivered synchronously: no emulation in the way
    }

    void delaysEachMessage()
    {
        NetContext net(1);
        Recorder r;
        WanEmulationConfig c;
        c.delay = 50ms;
        const auto e = emulateWan(net, c, r.events());
        auto link = std::make_shared<FakeLink>();
        const auto sent = Clock::now();
        e.message(link, Activations{1, 0, {}, {}});
        QVERIFY(test::waitFor([&] { return r.count() == 1; }, 5000ms));
        const double took = ms(r.messages[0].second - sent);
        QVERIFY2(took >= 49 && took < 2000, qPrintable(QString::number(took)));
    }

    void keepsOrderUnderJitterAndClosesLast()
    {
        NetContext net(1);
        Recorder r;
        WanEmulationConfig c;
        c.delay = 20ms;
        c.jitter = 19ms; // far more than the gap between messages: reordering would show
        const auto e = emulateWan(net, c, r.events());
        auto link = std::make_shared<FakeLink>();
        for (uint64_t id = 0; id < 50; ++id) {
            e.message(link, Activations{id, 0, {}, {}});
            if (id % 10 == 0)
                std::this_thread::sleep_for(1ms);
        }
        e.closed(link, CloseInfo{"bye", true, true, false, false});
        QVERIFY(test::waitFor(
            [&] {
                std::lock_guard lock(r.mutex);
                return !r.closedAfter.empty();
            },
            5000ms));
        QCOMPARE(r.count(), size_t(50));
        for (uint64_t i = 0; i < 50; ++i)
            QCOMPARE(r.messages[i].first, i);
        QCOMPARE(r.closedAfter.front(), size_t(50));
    }

    void rateCapSpacesLargeMessages()
    {
        NetContext net(1);
        Recorder r;
        WanEmulationConfig c;
        c.rateMbit = 8; // 1 MB/s: 100 kB take 100 ms on the emulated wire
        const auto e = emulateWan(net, c, r.events());
        auto link = std::make_shared<FakeLink>();
        const auto sent = Clock::now();
        for (uint64_t id = 0; id < 3; ++id) {
            link->received += 100'000;
            e.message(link, Activations{id, 0, {}, {}});
        }
        QVERIFY(test::waitFor([&] { return r.count() == 3; }, 5000ms));
        const double first = ms(r.messages[0].second - sent), last = ms(r.messages[2].second - sent);
        QVERIFY2(first >= 95 && first < 2000, qPrintable(QString::number(first)));
        // Back to back at 1 MB/s: the third finishes 300 ms after the start, not at once.
        QVERIFY2(last >= 295 && last < 3000, qPrintable(QString::number(last)));
        QVERIFY(ms(r.messages[2].second - r.messages[1].second) >= 95);
    }
};

QTEST_APPLESS_MAIN(TstWanEmulation)
#include "tst_wan_emulation.moc"
