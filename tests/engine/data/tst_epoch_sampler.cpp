// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <algorithm>
#include <set>

#include "engine/common/error.h"
#include "engine/data/epoch_sampler.h"

using namespace rookery;
using data::EpochSampler;

class TestEpochSampler : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void epochIsAPermutation()
    {
        EpochSampler s(100, 7);
        std::set<int64_t> seen;
        for (int i = 0; i < 10; ++i)
            for (auto idx : s.next(10))
                QVERIFY(seen.insert(idx).second);
        QCOMPARE(seen.size(), size_t(100));
        QCOMPARE(s.cursor().epoch, int64_t(0));
        s.next(10);
        QCOMPARE(s.cursor().epoch, int64_t(1));
    }

    void orderDependsOnSeedAndEpoch()
    {
        EpochSampler a(1000, 1), b(1000, 1), c(1000, 2);
        const auto first = a.next(1000);
        QCOMPARE(b.next(1000), first);
        QVERIFY(c.next(1000) != first);
        QVERIFY(a.next(1000) != first); // epoch 1 differs from epoch 0
        QVERIFY(!std::is_sorted(first.begin(), first.end()));
    }

    void cursorRestoresExactly()
    {
        EpochSampler a(500, 3);
        for (int i = 0; i < 37; ++i)
            a.next(32);
        EpochSampler b(500, 3);
        b.setCursor(a.cursor());
        for (int i = 0; i < 50; ++i)
            QCOMPARE(b.next(32), a.next(32));
    }

    void batchNeverSpansEpochs()
    {
        EpochSampler s(10, 1);
        s.next(4);
        s.next(4);
        const auto third = s.next(4); // only 2 left in epoch 0: skipped
        QCOMPARE(s.cursor().epoch, int64_t(1));
        QCOMPARE(s.cursor().offset, int64_t(4));
        QCOMPARE(std::set<int64_t>(third.begin(), third.end()).size(), size_t(4));
    }

    void shardsPartitionTheData()
    {
        std::set<int64_t> all;
        for (int shard = 0; shard < 3; ++shard) {
            EpochSampler s(100, 5, {shard, 3});
            for (auto idx : s.next(s.shardSize())) {
                QCOMPARE(int(idx % 3), shard);
                QVERIFY(all.insert(idx).second);
            }
        }
        QCOMPARE(all.size(), size_t(100));
    }

    void rejectsBadArguments()
    {
        QVERIFY_THROWS_EXCEPTION(Error, EpochSampler(10, 1, {3, 3}));
        QVERIFY_THROWS_EXCEPTION(Error, EpochSampler(0, 1));
        EpochSampler s(10, 1);
        QVERIFY_THROWS_EXCEPTION(Error, s.next(11));
        QVERIFY_THROWS_EXCEPTION(Error, s.next(0));
        QVERIFY_THROWS_EXCEPTION(Error, s.setCursor({-1, 0}));
    }
};

QTEST_APPLESS_MAIN(TestEpochSampler)
#include "tst_epoch_sampler.moc"
