// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include "engine/common/token_bucket.h"

using rookery::TokenBucket;
using namespace std::chrono_literals;

class TestTokenBucket : public QObject
{
    Q_OBJECT

    TokenBucket::Clock::time_point m_now{};
    TokenBucket::NowFn clock()
    {
        return [this] { return m_now; };
    }

private Q_SLOTS:
    void unlimitedNeverWaits()
    {
        TokenBucket b(0, 0, clock());
        QCOMPARE(b.reserve(1'000'000'000).count(), 0);
    }

    void burstThenRate()
    {
        TokenBucket b(1000, 500, clock()); // 1000 B/s, 500 B burst
        m_now += 10s;                      // a long quiet spell fills only the burst
        QCOMPARE(b.reserve(500).count(), 0);
        QCOMPARE(b.reserve(1000), std::chrono::nanoseconds(1s));
        m_now += 1s; // the booked debt is paid off exactly
        QCOMPARE(b.reserve(100), std::chrono::nanoseconds(100ms));
    }

    void averageRateHolds()
    {
        const auto start = m_now;
        TokenBucket b(10'000, 1000, clock());
        // Send 100 chunks of 1000 bytes, each when allowed; total time ~ 10 s.
        for (int i = 0; i < 100; ++i)
            m_now += b.reserve(1000);
        const double seconds = std::chrono::duration<double>(m_now - start).count();
        QVERIFY2(seconds > 9.8 && seconds < 10.01, qPrintable(QString::number(seconds)));
    }

    void rateChangeAppliesNext()
    {
        TokenBucket b(1000, 1000, clock());
        m_now += 2s;
        b.setRate(0);
        QCOMPARE(b.reserve(1'000'000).count(), 0);
        b.setRate(100, 100);
        QCOMPARE(b.reserve(200), std::chrono::nanoseconds(2s)); // starts empty after a change
    }
};

QTEST_APPLESS_MAIN(TestTokenBucket)
#include "tst_token_bucket.moc"
