// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "engine/common/error.h"
#include "engine/swarm/ring_allreduce.h"
#include "engine/swarm/ring_averaging.h"

using namespace rookery::swarm;
using rookery::DType;
using rookery::NamedTensor;
using rookery::ValuePrecision;
using namespace std::chrono_literals;

Q_DECLARE_METATYPE(rookery::ValuePrecision)

namespace {

// An in-process mailbox per member: member r sends into mailbox (r + 1) % n.
struct Mailbox
{
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<RingChunk> queue;
};

class QueueLinks : public RingLinks
{
public:
    QueueLinks(Mailbox &next, Mailbox &mine, bool mute = false)
        : m_next(next)
        , m_mine(mine)
        , m_mute(mute)
    { }
    /// A misbehaving member: changes every chunk it sends.
    std::function<void(RingChunk &)> tamper;

    void sendNext(RingChunk chunk) override
    {
        if (m_mute)
            return;
        if (tamper)
            tamper(chunk);
        std::lock_guard lock(m_next.mutex);
        m_next.queue.push_back(std::move(chunk));
        m_next.ready.notify_one();
    }
    std::optional<RingChunk> receivePrevious(std::chrono::steady_clock::time_point deadline) override
    {
        std::unique_lock lock(m_mine.mutex);
        if (!m_mine.ready.wait_until(lock, deadline, [&] { return !m_mine.queue.empty(); }))
            return std::nullopt;
        RingChunk c = std::move(m_mine.queue.front());
        m_mine.queue.pop_front();
        return c;
    }

private:
    Mailbox &m_next;
    Mailbox &m_mine;
    bool m_mute;
};

struct RingRun
{
    std::vector<std::vector<float>> values;
    std::vector<RingResult> results;
};

// What `n` ring members hold of `count` values: close to each other, as clusters are
// between averaging rounds (the all-reduce refuses values far from the receiver's own):
// a shared value in [1, 2) per element, and each member's drift of up to 0.2 from it.
std::vector<std::vector<float>> memberValues(int n, size_t count)
{
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> shared(1, 2), drift(-0.2f, 0.2f);
    std::vector<float> base(count);
    for (auto &x : base)
        x = shared(rng);
    std::vector<std::vector<float>> values(size_t(n), base);
    for (auto &v : values)
        for (auto &x : v)
            x += drift(rng);
    return values;
}

RingRun runRing(int n, size_t count, int muteRank = -1, uint64_t round = 1,
                const std::function<void(std::vector<Mailbox> &)> &prefill = {})
{
    RingRun run;
    run.values = memberValues(n, count);
    std::vector<Mailbox> boxes(static_cast<size_t>(n));
    if (prefill)
        prefill(boxes);
    std::vector<std::unique_ptr<QueueLinks>> links;
    for (int r = 0; r < n; ++r)
        links.push_back(std::make_unique<QueueLinks>(boxes[size_t((r + 1) % n)], boxes[size_t(r)], r == muteRank));
    run.results.resize(size_t(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            run.results[size_t(r)] = ringAllReduceAverage(run.values[size_t(r)], r, n, round, *links[size_t(r)], 300ms);
        });
    for (auto &t : threads)
        t.join();
    return run;
}

// A ring of `n` members close to each other (N(0, 1) weights, each member drifted by
// N(0, drift)), with member `tamperer`'s outgoing chunks changed by `tamper` (none when
// -1), run to the end.
struct CloseRing
{
    std::vector<std::vector<float>> original, values;
    std::vector<RingResult> results;
};

CloseRing runCloseRing(int n, size_t count, float drift, int tamperer = -1,
                       std::function<void(RingChunk &)> tamper = {})
{
    std::mt19937 rng(7);
    std::normal_distribution<float> weight(0, 1), drifted(0, drift);
    std::vector<float> shared(count);
    for (auto &x : shared)
        x = weight(rng);
    CloseRing ring;
    ring.values.assign(size_t(n), shared);
    for (auto &v : ring.values)
        for (auto &x : v)
            x += drifted(rng);
    ring.original = ring.values;
    std::vector<Mailbox> boxes(static_cast<size_t>(n));
    std::vector<std::unique_ptr<QueueLinks>> links;
    for (int r = 0; r < n; ++r)
        links.push_back(std::make_unique<QueueLinks>(boxes[size_t((r + 1) % n)], boxes[size_t(r)]));
    if (tamperer >= 0)
        links[size_t(tamperer)]->tamper = std::move(tamper);
    ring.results.resize(size_t(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            ring.results[size_t(r)] = ringAllReduceAverage(ring.values[size_t(r)], r, n, 1, *links[size_t(r)], 300ms);
        });
    for (auto &t : threads)
        t.join();
    return ring;
}

// A ring of `n` members that share `base` (the weights after their last round) and
// each moved from it by up to 0.01 since, averaging with `encodings[r]` for member r
// (its base filled in when the encoding has a tag), to the end.
struct BasedRing
{
    std::vector<float> base;
    std::vector<std::vector<float>> original, values;
    std::vector<RingResult> results;
    double seconds = 0;
};

BasedRing runBasedRing(int n, size_t count, std::vector<RingEncoding> encodings,
                       std::chrono::milliseconds timeout = 300ms)
{
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> shared(1, 2), moved(-0.01f, 0.01f);
    BasedRing ring;
    ring.base.resize(count);
    for (auto &x : ring.base)
        x = shared(rng);
    ring.values.assign(size_t(n), ring.base);
    for (auto &v : ring.values)
        for (auto &x : v)
            x += moved(rng);
    ring.original = ring.values;
    for (auto &e : encodings)
        if (e.baseTag)
            e.base = ring.base;
    std::vector<Mailbox> boxes(static_cast<size_t>(n));
    std::vector<std::unique_ptr<QueueLinks>> links;
    for (int r = 0; r < n; ++r)
        links.push_back(std::make_unique<QueueLinks>(boxes[size_t((r + 1) % n)], boxes[size_t(r)]));
    ring.results.resize(size_t(n));
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            ring.results[size_t(r)] =
                ringAllReduceAverage(ring.values[size_t(r)], r, n, 1, *links[size_t(r)], timeout, encodings[size_t(r)]);
        });
    for (auto &t : threads)
        t.join();
    ring.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return ring;
}

// One parameter "0.weight" holding `values`.
std::vector<NamedTensor> parameter(const std::vector<float> &values)
{
    NamedTensor t;
    t.name = "0.weight";
    t.shape = {int64_t(values.size())};
    t.data.resize(values.size() * sizeof(float));
    std::memcpy(t.data.data(), values.data(), t.data.size());
    return {t};
}

float first(const std::vector<NamedTensor> &p)
{
    float v = 0;
    std::memcpy(&v, p.at(0).data.data(), sizeof v);
    return v;
}

} // namespace

class TestRingAllReduce : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void averages_data()
    {
        QTest::addColumn<int>("members");
        QTest::addColumn<int>("count");
        QTest::newRow("1 member") << 1 << 10;
        QTest::newRow("2 members") << 2 << 1000;
        QTest::newRow("3 members, uneven chunks") << 3 << 1001;
        QTest::newRow("5 members") << 5 << 4096;
        QTest::newRow("more members than values") << 4 << 3;
    }

    void averages()
    {
        QFETCH(int, members);
        QFETCH(int, count);
        std::vector<double> expected(size_t(count), 0.0);
        const auto held = memberValues(members, size_t(count));
        for (int r = 0; r < members; ++r)
            for (int i = 0; i < count; ++i)
                expected[size_t(i)] += held[size_t(r)][size_t(i)] / double(members);
        const RingRun run = runRing(members, size_t(count));
        for (int r = 0; r < members; ++r) {
            QVERIFY2(run.results[size_t(r)].complete, run.results[size_t(r)].error.c_str());
            for (int i = 0; i < count; ++i)
                QVERIFY(std::abs(run.values[size_t(r)][size_t(i)] - expected[size_t(i)]) < 1e-5);
        }
        // Bandwidth-optimal: each member sends 2(n-1)/n of the data.
        if (members > 1 && count >= members) {
            const double sent = double(run.results[0].bytesSent) / (double(count) * 4);
            QVERIFY(std::abs(sent - 2.0 * (members - 1) / members) < 0.01);
        }
    }

    // Members that share the last round's weights sum their differences from them: the
    // same average, and as bf16 half the bytes, as int8 blocks about a quarter, as int4
    // an eighth. Rounding the weights themselves to bf16 would move values near 1.5 by
    // up to 3e-3; the differences (at most 0.01) keep the error near 1e-4 as bf16, within
    // a few 1e-4 as int8 (a block's step is at least its largest value over 127) and a
    // few 1e-3 as int4 (over 7; the carry brings that back in later rounds). The members
    // end bit for bit equal either way.
    void averagesDifferencesFromASharedBase_data()
    {
        QTest::addColumn<int>("members");
        QTest::addColumn<int>("count");
        QTest::addColumn<ValuePrecision>("precision");
        QTest::newRow("2 members, float32") << 2 << 1000 << ValuePrecision::Float32;
        QTest::newRow("2 members, bf16") << 2 << 1000 << ValuePrecision::Bf16;
        QTest::newRow("3 members, uneven chunks, bf16") << 3 << 1001 << ValuePrecision::Bf16;
        QTest::newRow("5 members, bf16") << 5 << 4096 << ValuePrecision::Bf16;
        QTest::newRow("2 members, int8") << 2 << 1000 << ValuePrecision::Int8;
        QTest::newRow("3 members, uneven chunks, int8") << 3 << 1001 << ValuePrecision::Int8;
        QTest::newRow("5 members, int8") << 5 << 4096 << ValuePrecision::Int8;
        QTest::newRow("2 members, int4") << 2 << 1000 << ValuePrecision::Int4;
        QTest::newRow("3 members, uneven chunks, int4") << 3 << 1001 << ValuePrecision::Int4;
    }

    void averagesDifferencesFromASharedBase()
    {
        QFETCH(int, members);
        QFETCH(int, count);
        QFETCH(ValuePrecision, precision);
        const BasedRing ring =
            runBasedRing(members, size_t(count), std::vector<RingEncoding>(size_t(members), {{}, 77, precision}));
        double worst = 0;
        for (int r = 0; r < members; ++r) {
            QVERIFY2(ring.results[size_t(r)].complete, ring.results[size_t(r)].error.c_str());
            QVERIFY(!ring.results[size_t(r)].rejected);
            QVERIFY(ring.values[size_t(r)] == ring.values[0]);
        }
        for (int i = 0; i < count; ++i) {
            double expected = 0;
            for (int r = 0; r < members; ++r)
                expected += ring.original[size_t(r)][size_t(i)] / double(members);
            worst = std::max(worst, std::abs(double(ring.values[0][size_t(i)]) - expected));
        }
        const double bound = precision == ValuePrecision::Int4   ? 5e-3
                             : precision == ValuePrecision::Int8 ? 5e-4
                             : precision == ValuePrecision::Bf16 ? 2e-4
                                                                 : 1e-6;
        QVERIFY2(worst < bound, qPrintable(QString::number(worst)));
        if (precision != ValuePrecision::Float32)
            QVERIFY2(worst > 0, "16- and 8-bit differences should round somewhere");
        const double perValue = precision == ValuePrecision::Int4   ? (0.5 + 1.0 / 64) / 4
                                : precision == ValuePrecision::Int8 ? (1 + 1.0 / 64) / 4
                                : precision == ValuePrecision::Bf16 ? 0.5
                                                                    : 1.0;
        const double sent = double(ring.results[0].bytesSent) / (double(count) * 4);
        QVERIFY2(std::abs(sent - perValue * 2.0 * (members - 1) / members) < 0.01, qPrintable(QString::number(sent)));
    }

    // A member that missed the last round (or restarted) holds another base, or none:
    // both sides see it in the first chunk and end the round at once, values unchanged,
    // rather than averaging differences against weights or waiting out the timeout.
    void aMemberWithAnotherBaseEndsTheRoundAtOnce_data()
    {
        QTest::addColumn<quint64>("otherTag");
        QTest::newRow("no base") << quint64(0);
        QTest::newRow("another base") << quint64(78);
    }

    void aMemberWithAnotherBaseEndsTheRoundAtOnce()
    {
        QFETCH(quint64, otherTag);
        const BasedRing ring =
            runBasedRing(2, 100, {{{}, 77, ValuePrecision::Bf16}, {{}, otherTag, ValuePrecision::Int8}}, 5s);
        QVERIFY2(ring.seconds < 2.5, qPrintable(QString::number(ring.seconds)));
        for (int r = 0; r < 2; ++r) {
            const RingResult &res = ring.results[size_t(r)];
            QVERIFY(!res.complete);
            QVERIFY2(res.baseMismatch, res.error.c_str());
            QVERIFY2(QString::fromStdString(res.error).contains(QStringLiteral("averages from")), res.error.c_str());
            QVERIFY(ring.values[size_t(r)] == ring.original[size_t(r)]);
        }
    }

    // Error feedback: a value whose difference is far below its int8 step (0.003 in a
    // block whose largest is 1: a step of 2^-6) rounds to nothing every round, and
    // without a carry it never moves. With one, what rounding left out comes back in
    // the next rounds: over 6 rounds it moves by about 6 x 0.003, within a step. The
    // members still end every round equal.
    void aCarryBringsBackWhatRoundingLeftOut_data()
    {
        QTest::addColumn<bool>("withCarry");
        QTest::newRow("without a carry") << false;
        QTest::newRow("with a carry") << true;
    }

    void aCarryBringsBackWhatRoundingLeftOut()
    {
        QFETCH(bool, withCarry);
        constexpr size_t count = 64;
        constexpr int rounds = 6;
        std::vector<float> anchor(count, 0.5f);
        std::vector<std::vector<float>> carry(2, std::vector<float>(withCarry ? count : 0, 0.0f));
        std::vector<Mailbox> boxes(2);
        QueueLinks toB(boxes[1], boxes[0]), toA(boxes[0], boxes[1]);
        for (int round = 1; round <= rounds; ++round) {
            // Each member moved every value the same way since the last round.
            std::vector<std::vector<float>> values(2, anchor);
            for (auto &v : values) {
                v[0] += 1.0f;
                v[1] += 0.003f;
            }
            std::vector<RingResult> results(2);
            const auto member = [&](int r) {
                const RingEncoding e{anchor, 77, ValuePrecision::Int8, carry[size_t(r)]};
                results[size_t(r)] =
                    ringAllReduceAverage(values[size_t(r)], r, 2, uint64_t(round), r == 0 ? toB : toA, 1s, e);
            };
            std::thread t(member, 1);
            member(0);
            t.join();
            for (const auto &res : results)
                QVERIFY2(res.complete, res.error.c_str());
            QVERIFY(values[0] == values[1]);
            anchor = values[0];
        }
        const double moved = double(anchor[1]) - 0.5;
        if (withCarry)
            QVERIFY2(std::abs(moved - rounds * 0.003) <= 1.0 / 64, qPrintable(QString::number(moved)));
        else
            QCOMPARE(moved, 0.0);
        QCOMPARE(double(anchor[0]), 0.5 + rounds * 1.0); // on the grid: exact either way
    }

    // A round that ends on a base mismatch ends on both members, and both start the
    // next from their own values. An honest neighbour then completes it; one that names
    // a base again (forging it, to end its neighbours' rounds) is blamed.
    void aBaseNamedAgainAfterAMismatchIsBlamed_data()
    {
        QTest::addColumn<bool>("forged");
        QTest::newRow("honest: it missed a round") << false;
        QTest::newRow("forged") << true;
    }

    void aBaseNamedAgainAfterAMismatchIsBlamed()
    {
        QFETCH(bool, forged);
        std::vector<Mailbox> boxes(2);
        QueueLinks toB(boxes[1], boxes[0]), toA(boxes[0], boxes[1]);
        if (forged)
            toA.tamper = [](RingChunk &c) { c.base = 99; };
        RingAveraging a(1s), b(1s);
        const RingPlace placeA{0, 1, 0, 2}, placeB{0, 1, 1, 2};
        const std::vector<float> anchorA{1, 2}, anchorB{1.5f, 2.5f};
        for (int64_t round = 1; round <= 3; ++round) {
            // After the first round neither has an anchor (the caller forgets it).
            const RingEncoding encA = round == 1 ? RingEncoding{anchorA, 77} : RingEncoding{};
            const RingEncoding encB = round == 1 ? RingEncoding{anchorB, 78} : RingEncoding{};
            RingAveraging::Outcome x, y;
            std::thread t([&] { y = b.average(parameter({3, 4}), placeB, round, toA, encB); });
            x = a.average(parameter({1, 2}), placeA, round, toB, encA);
            t.join();
            if (round == 1 || forged) {
                QVERIFY(!x.result.complete);
                QVERIFY2(x.result.baseMismatch, x.result.error.c_str());
                QCOMPARE(x.result.rejected, round > 1);
                if (round > 1)
                    QVERIFY2(x.result.rejection.find("named a base again") != std::string::npos,
                             x.result.rejection.c_str());
            } else {
                QVERIFY2(x.result.complete, x.result.error.c_str());
                QVERIFY(!x.result.rejected);
                QCOMPARE(first(x.parameters), 2.0f);
            }
            QVERIFY(!y.result.rejected); // A itself sent what it held
        }
    }

    // Differences are checked as the values are: a member that scales its differences
    // by 1e6 is refused by the next one, and the round completes near the others' mean.
    void aPoisonedDifferenceIsRefused()
    {
        constexpr int n = 3, bad = 1;
        std::vector<RingEncoding> encodings(size_t(n), {{}, 77, ValuePrecision::Bf16});
        std::vector<Mailbox> boxes(static_cast<size_t>(n));
        std::mt19937 rng(5);
        std::uniform_real_distribution<float> moved(-0.01f, 0.01f);
        const std::vector<float> base(300, 1.5f);
        std::vector<std::vector<float>> values(size_t(n), base);
        for (auto &v : values)
            for (auto &x : v)
                x += moved(rng);
        std::vector<std::unique_ptr<QueueLinks>> links;
        for (int r = 0; r < n; ++r)
            links.push_back(std::make_unique<QueueLinks>(boxes[size_t((r + 1) % n)], boxes[size_t(r)]));
        links[bad]->tamper = [](RingChunk &c) {
            for (auto &x : c.values)
                x *= 1e6f;
        };
        for (auto &e : encodings)
            e.base = base;
        std::vector<RingResult> results(static_cast<size_t>(n));
        std::vector<std::thread> threads;
        for (int r = 0; r < n; ++r)
            threads.emplace_back([&, r] {
                results[size_t(r)] =
                    ringAllReduceAverage(values[size_t(r)], r, n, 1, *links[size_t(r)], 300ms, encodings[size_t(r)]);
            });
        for (auto &t : threads)
            t.join();
        QVERIFY2(results[bad + 1].rejected, results[bad + 1].rejection.c_str());
        for (int r = 0; r < n; ++r) {
            QVERIFY2(results[size_t(r)].complete, results[size_t(r)].error.c_str());
            if (r != bad)
                for (float x : values[size_t(r)])
                    QVERIFY2(std::abs(x - 1.5f) < 0.02f, qPrintable(QString::number(x)));
        }
    }

    void silentMemberAbandonsTheRound()
    {
        const RingRun run = runRing(3, 300, /*muteRank=*/1);
        const auto held = memberValues(3, 300);
        for (int r = 0; r < 3; ++r) {
            QVERIFY(!run.results[size_t(r)].complete);
            QVERIFY(run.values[size_t(r)] == held[size_t(r)]); // untouched
        }
        QVERIFY(
            QString::fromStdString(run.results[2].error).contains(QStringLiteral("no data from the previous member")));
    }

    // A member that gives a round up tells its next member at once, and that one passes it
    // on: in a ring of 3 whose member 1 went silent, member 2 waits 300 ms for it, and
    // member 0, which would wait 20 s for member 2's next chunk, ends the round as soon as
    // member 2 does, then tells member 1. Nobody's values change.
    void aMemberThatGivesARoundUpTellsItsNextAtOnce()
    {
        std::vector<Mailbox> boxes(3);
        QueueLinks l0(boxes[1], boxes[0]), l1(boxes[2], boxes[1], /*mute=*/true), l2(boxes[0], boxes[2]);
        auto values = memberValues(3, 300);
        const auto held = values;
        RingResult r0, r2;
        const auto start = std::chrono::steady_clock::now();
        std::thread t2([&] { r2 = ringAllReduceAverage(values[2], 2, 3, 7, l2, 300ms); });
        r0 = ringAllReduceAverage(values[0], 0, 3, 7, l0, 20s);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        t2.join();
        QVERIFY(!r2.complete && !r0.complete);
        QVERIFY2(QString::fromStdString(r2.error).contains(QStringLiteral("no data from the previous member")),
                 r2.error.c_str());
        QVERIFY2(QString::fromStdString(r0.error).contains(QStringLiteral("gave this round up")), r0.error.c_str());
        QVERIFY2(seconds < 5, qPrintable(QString::number(seconds)));
        QVERIFY(values == held);
        // Member 0 passed the notice on to member 1: after its chunks of steps 0 and 1 (it
        // had member 2's first), a notice of round 7.
        QCOMPARE(boxes[1].queue.size(), size_t(3));
        QCOMPARE(boxes[1].queue.back().step, kRoundEndedStep);
        QCOMPARE(boxes[1].queue.back().round, uint64_t(7));
        QVERIFY(boxes[1].queue.back().values.empty());
    }

    // A notice of the round a member waits in ends it at once; a notice of an older round
    // is a leftover, skipped like an older round's chunks.
    void aNoticeEndsOnlyItsRound()
    {
        std::vector<Mailbox> boxes(2);
        QueueLinks toB(boxes[1], boxes[0]);
        boxes[0].queue.push_back(roundEndedNotice(4)); // a leftover of round 4
        boxes[0].queue.push_back(roundEndedNotice(5));
        std::vector<float> v{1, 2, 3, 4};
        const auto result = ringAllReduceAverage(v, 0, 2, 5, toB, 20s);
        QVERIFY(!result.complete);
        QVERIFY2(result.seconds < 5, qPrintable(QString::number(result.seconds)));
        QVERIFY2(QString::fromStdString(result.error).contains(QStringLiteral("gave this round up")),
                 result.error.c_str());
        QVERIFY(!result.previousFinished); // this round only
        QCOMPARE(v, (std::vector<float>{1, 2, 3, 4}));
    }

    void staleRoundsAreSkipped()
    {
        const RingRun run = runRing(3, 90, -1, 5, [](std::vector<Mailbox> &boxes) {
            for (auto &b : boxes)
                b.queue.push_back({4, 0, 0, std::vector<float>(30, 99.f)}); // leftovers of round 4
        });
        for (const auto &r : run.results)
            QVERIFY2(r.complete, r.error.c_str());
        QVERIFY(run.values[0] == run.values[1] && run.values[1] == run.values[2]);
    }

    // A member that resumed three rounds behind its ring joins the round its neighbour
    // waits in, and both stay in step afterwards: neither overtakes the other.
    void aMemberBehindJoinsItsRingAndStaysInStep()
    {
        std::vector<Mailbox> boxes(2);
        QueueLinks toB(boxes[1], boxes[0]), toA(boxes[0], boxes[1]);
        RingAveraging behind(2s), ahead(2s);
        const RingPlace a{0, 1, 0, 2}, b{0, 1, 1, 2};
        for (int64_t i = 0; i < 4; ++i) {
            RingAveraging::Outcome x, y;
            std::thread t([&] { y = ahead.average(parameter({float(110 + i), 22}), b, 8 + i, toA); });
            x = behind.average(parameter({float(100 + i), 24}), a, 5 + i, toB);
            t.join();
            QVERIFY2(x.result.complete, x.result.error.c_str());
            QVERIFY2(y.result.complete, y.result.error.c_str());
            QCOMPARE(first(x.parameters), float(105 + i)); // the average of 100 + i and 110 + i
            QCOMPARE(first(y.parameters), float(105 + i));
            QCOMPARE(behind.roundOffset(), int64_t(3));
            QCOMPARE(ahead.roundOffset(), int64_t(0));
        }
    }

    // A neighbour announcing a round far ahead (2^62) is not followed: the round is
    // abandoned, and this member's numbering stays where it was.
    void aForgedFarRoundIsNotFollowed()
    {
        std::vector<Mailbox> boxes(2);
        QueueLinks toB(boxes[1], boxes[0]);
        boxes[0].queue.push_back({uint64_t(1) << 62, 0, 0, std::vector<float>(1, 1.f)});
        RingAveraging member(1s);
        const auto x = member.average(parameter({100, 24}), {0, 1, 0, 2}, 5, toB);
        QVERIFY(!x.result.complete);
        QVERIFY2(x.result.error.find("not followed") != std::string::npos, x.result.error.c_str());
        QCOMPARE(member.roundOffset(), int64_t(0));
    }

    // One member sends poison: the first honest member after it refuses it, blames it,
    // and passes its own values on in its place; the round completes for everyone (no
    // timeouts), and nothing non-finite or scaled reaches an honest member's weights.
    void aPoisonedChunkIsRefused_data()
    {
        QTest::addColumn<int>("kind");
        QTest::newRow("scaled by 1e6") << 0;
        QTest::newRow("sign-flipped") << 1;
        QTest::newRow("NaN") << 2;
        QTest::newRow("infinite") << 3;
    }

    void aPoisonedChunkIsRefused()
    {
        QFETCH(int, kind);
        constexpr int n = 4, bad = 2;
        constexpr size_t count = 400;
        const CloseRing ring = runCloseRing(n, count, 0.1f, bad, [kind](RingChunk &c) {
            for (auto &x : c.values)
                x = kind == 0   ? x * 1e6f
                    : kind == 1 ? -x
                    : kind == 2 ? std::numeric_limits<float>::quiet_NaN()
                                : std::numeric_limits<float>::infinity();
        });
        const RingResult &next = ring.results[(bad + 1) % n];
        QVERIFY2(next.rejected, next.rejection.c_str());
        QVERIFY2(QString::fromStdString(next.rejection).contains(QStringLiteral("refused the previous member's chunk")),
                 next.rejection.c_str());
        for (int r = 0; r < n; ++r) {
            QVERIFY2(ring.results[size_t(r)].complete, ring.results[size_t(r)].error.c_str());
            if (r == bad)
                continue;
            QVERIFY2(!ring.results[size_t(r)].rejected || r == (bad + 1) % n,
                     ring.results[size_t(r)].rejection.c_str());
            // Averaged among close members: each value moved by about the drift, no more.
            for (size_t i = 0; i < count; ++i) {
                const float v = ring.values[size_t(r)][i];
                QVERIFY(std::isfinite(v));
                QVERIFY2(std::abs(v - ring.original[size_t(r)][i]) < 1.0f, qPrintable(QString::number(v)));
            }
        }
    }

    // The same members without the poison average as usual: the check does not get in
    // the way of honest rounds, including the members' drift since the last one.
    void closeMembersPassTheCheck()
    {
        const CloseRing ring = runCloseRing(4, 400, 0.5f);
        for (const auto &r : ring.results)
            QVERIFY2(r.complete && !r.rejected, r.rejection.c_str());
        QVERIFY(ring.values[0] == ring.values[3]);
    }

    void mismatchedSizesAreRefused()
    {
        // Member 0 thinks the model has 10 values, the others 12: nobody averages garbage.
        std::vector<Mailbox> boxes(2);
        QueueLinks a(boxes[1], boxes[0]), b(boxes[0], boxes[1]);
        std::vector<float> va(10, 1.f), vb(12, 3.f);
        RingResult ra, rb;
        std::thread t([&] { rb = ringAllReduceAverage(vb, 1, 2, 1, b, 300ms); });
        ra = ringAllReduceAverage(va, 0, 2, 1, a, 300ms);
        t.join();
        QVERIFY(!ra.complete || !rb.complete);
        QVERIFY(QString::fromStdString(ra.error + rb.error).contains(QStringLiteral("disagree")));
    }

    // Averaging runs against a snapshot while the stage trains on: the round's change
    // goes on top of the steps taken meanwhile.
    void aRoundsChangeKeepsTheStepsTakenMeanwhile()
    {
        const auto tensor = [](const std::string &name, std::vector<float> v) {
            NamedTensor t{name, DType::Float32, {int64_t(v.size())}, std::vector<uint8_t>(v.size() * sizeof(float))};
            std::memcpy(t.data.data(), v.data(), t.data.size());
            return t;
        };
        const auto values = [](const NamedTensor &t) {
            std::vector<float> v(t.data.size() / sizeof(float));
            std::memcpy(v.data(), t.data.data(), t.data.size());
            return v;
        };
        const std::vector<NamedTensor> before = {tensor("0.weight", {1, 2}), tensor("0.bias", {3})};
        const std::vector<NamedTensor> after = {tensor("0.weight", {2, 2}), tensor("0.bias", {1})};
        // Trained on meanwhile; 1.weight belongs to another ring and is not touched.
        const std::vector<NamedTensor> current = {tensor("0.weight", {1.5f, 1}), tensor("0.bias", {3.25f}),
                                                  tensor("1.weight", {9})};
        const auto moved = movedByAveraging(current, before, after);
        QCOMPARE(moved.size(), size_t(2));
        QCOMPARE(moved[0].name, std::string("0.weight"));
        QCOMPARE(values(moved[0]), (std::vector<float>{2.5f, 1}));
        QCOMPARE(values(moved[1]), (std::vector<float>{1.25f}));
        // Nothing trained meanwhile: the average itself.
        QCOMPARE(values(movedByAveraging(before, before, after)[1]), (std::vector<float>{1}));
        // A parameter that is gone, or changed size, is refused with its name.
        QVERIFY_THROWS_EXCEPTION(rookery::Error, movedByAveraging({current[2]}, before, after));
        QVERIFY_THROWS_EXCEPTION(rookery::Error,
                                 movedByAveraging({tensor("0.weight", {1}), current[1]}, before, after));
    }
};

QTEST_APPLESS_MAIN(TestRingAllReduce)
#include "tst_ring_allreduce.moc"
