// SPDX-License-Identifier: GPL-3.0-or-later
// UploadProbe's rule on a modelled link (a fake clock): the round trip from a bare ping,
// the rate from a burst's last Pong less that round trip, a second burst only after a
// quick first, and no figure when the link refuses a ping.
#include <QtTest>

#include <deque>

#include "engine/net/upload_probe.h"

using namespace rookery;
using namespace std::chrono_literals;
using net::Ping;
using net::UploadProbe;
using Clock = UploadProbe::Clock;

namespace {

// A link that sends at `rate` bytes/s with a round trip of `rtt`: a ping's Pong comes
// back when its bytes have gone out (after those queued before it) plus the round trip.
struct ModelLink
{
    ModelLink(double bytesPerSecond, Clock::duration roundTrip)
        : rate(bytesPerSecond)
        , rtt(roundTrip)
    { }
    double rate;
    Clock::duration rtt;
    Clock::time_point wireFree{};
    std::deque<std::pair<Clock::time_point, uint64_t>> pongs;
    Clock::time_point now{};
    int pings = 0, padded = 0;
    size_t paddingBytes = 0;

    bool send(const Ping &p)
    {
        ++pings;
        if (!p.padding.empty()) {
            ++padded;
            paddingBytes = p.padding.size();
        }
        const auto start = std::max(now, wireFree);
        wireFree = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(double(p.padding.size()) / rate));
        pongs.emplace_back(wireFree + rtt, p.nonce);
        return true;
    }
    // Delivers every Pong in order, advancing the clock, until the probe is done or, with
    // a `limit`, until the next Pong would come after it (then the probe is cut short).
    void run(UploadProbe &probe, Clock::duration limit = Clock::duration::max())
    {
        const auto start = now;
        probe.start(now);
        while (!pongs.empty() && !probe.done()) {
            if (pongs.front().first - start > limit) {
                probe.finishEarly();
                return;
            }
            const auto [at, nonce] = pongs.front();
            pongs.pop_front();
            now = at;
            QVERIFY(probe.pong(nonce, now));
        }
    }
};

} // namespace

class TestUploadProbe : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // 0.5 MB/s, 20 ms: the first burst (4 x 60 KiB = 245,760 bytes) takes 0.49 s, not
    // quick, so it is the measure: exactly the link's rate, and no second burst.
    void aSlowLinkIsTimedByTheFirstBurstAlone()
    {
        ModelLink link{0.5e6, 20ms};
        UploadProbe probe([&](const Ping &p) { return link.send(p); }, 1000);
        link.run(probe);
        QVERIFY(probe.done());
        QCOMPARE(link.pings, 5);
        QCOMPARE(link.padded, 4);
        QCOMPARE(link.paddingBytes, net::kMaxPingPaddingBytes);
        QCOMPARE(probe.roundTrip(), std::chrono::microseconds(20'000));
        QVERIFY2(std::abs(probe.bytesPerSecond() - 0.5e6) < 1.0, probe.describe().c_str());
    }

    // 10 MB/s: the first burst takes 24.6 ms, quick, so 32 more pings go (1,966,080
    // bytes in 0.197 s), and that burst is the measure.
    void aFastLinkGetsTheSecondBurst()
    {
        ModelLink link{10e6, 20ms};
        UploadProbe probe([&](const Ping &p) { return link.send(p); }, 1000);
        link.run(probe);
        QVERIFY(probe.done());
        QCOMPARE(link.padded, 4 + 32);
        QVERIFY2(std::abs(probe.bytesPerSecond() - 10e6) < 10.0, probe.describe().c_str());
        QVERIFY(probe.describe().find("1.9 MiB") != std::string::npos);
    }

    // 50 kB/s (a poor uplink): the first burst would take 4.9 s, and the probe's time
    // ends at 2 s with one padded ping answered (at 1.25 s). That ping's bytes over its
    // time less the round trip are still the link's rate.
    void aProbeCutShortIsTimedByTheAnswersItHad()
    {
        ModelLink link{50e3, 20ms};
        UploadProbe probe([&](const Ping &p) { return link.send(p); }, 1000);
        link.run(probe, 2s);
        QVERIFY(probe.done());
        QVERIFY2(std::abs(probe.bytesPerSecond() - 50e3) < 0.1, probe.describe().c_str());
        QVERIFY(probe.describe().find("60.0 KiB") != std::string::npos);
        // Cut before any padded ping is answered: no figure, and it says so.
        ModelLink slower{50e3, 20ms};
        UploadProbe none([&](const Ping &p) { return slower.send(p); }, 1000);
        slower.run(none, 1s);
        QVERIFY(none.done());
        QCOMPARE(none.bytesPerSecond(), 0.0);
        QVERIFY(none.describe().find("no answer") != std::string::npos);
    }

    // Pongs of other pings (the link's own, another probe's) are not the probe's.
    void otherPongsAreNotItsOwn()
    {
        ModelLink link{1e6, 10ms};
        UploadProbe probe([&](const Ping &p) { return link.send(p); }, 1000);
        probe.start(link.now);
        QVERIFY(!probe.pong(999, link.now));
        QVERIFY(!probe.pong(1001, link.now)); // not sent yet
        QVERIFY(probe.pong(1000, link.now + 10ms));
        QVERIFY(!probe.done());
    }

    // A link that will not take the burst gives no figure, and says why.
    void aRefusedPingLeavesNoFigure()
    {
        int sent = 0;
        UploadProbe probe([&](const Ping &) { return ++sent < 3; }, 7);
        const auto t0 = Clock::time_point{};
        probe.start(t0);
        QVERIFY(probe.pong(7, t0 + 5ms)); // the round trip; the burst's second ping is refused
        QVERIFY(probe.done());
        QCOMPARE(probe.bytesPerSecond(), 0.0);
        QVERIFY(probe.describe().find("send queue is full") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestUploadProbe)
#include "tst_upload_probe.moc"
