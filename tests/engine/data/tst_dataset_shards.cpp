// SPDX-License-Identifier: GPL-3.0-or-later
// Datasets as the swarm serves them: shards and manifests that round-trip, refuse what
// does not fit, share out among clusters, and a store that never keeps corrupt bytes.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <set>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/secret_token.h"
#include "engine/data/dataset_manifest.h"
#include "engine/data/shard_store.h"

using namespace rookery;
using namespace rookery::data;

namespace {

ImageDataset sample(int64_t count, uint8_t seed)
{
    ImageDataset d;
    d.name = "toy";
    d.count = count;
    d.rows = 3;
    d.cols = 2;
    d.classes = 4;
    d.mean = 0.25f;
    d.stddev = 0.5f;
    for (int64_t i = 0; i < count * 6; ++i)
        d.pixels.push_back(uint8_t(i * 7 + seed));
    for (int64_t i = 0; i < count; ++i)
        d.labels.push_back(uint8_t((i + seed) % 4));
    return d;
}

template <class F> QString errorOf(F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace

class TestDatasetShards : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void shardsRoundTrip()
    {
        const auto train = sample(23, 1), test = sample(7, 2);
        const auto cut = cutIntoShards("toy", train, test, 10);
        QCOMPARE(cut.manifest.train.size(), size_t(3)); // 10 + 10 + 3
        QCOMPARE(cut.manifest.test.size(), size_t(1));
        QCOMPARE(cut.manifest.trainSamples(), int64_t(23));
        QCOMPARE(cut.shards.size(), size_t(4));
        std::vector<ImageDataset> parts;
        for (size_t i = 0; i < 3; ++i) {
            QCOMPARE(cut.manifest.train[i].sha256, sha256Hex(cut.shards[i]));
            parts.push_back(decodeShard(cut.manifest, cut.manifest.train[i], cut.shards[i]));
        }
        const auto whole = concatenate("toy/train", parts);
        QCOMPARE(whole.count, train.count);
        QVERIFY(whole.pixels == train.pixels);
        QVERIFY(whole.labels == train.labels);
        QCOMPARE(whole.mean, train.mean);
        // The manifest is canonical: the same data, the same bytes and hash.
        const auto again = cutIntoShards("toy", train, test, 10);
        QCOMPARE(manifestBytes(again.manifest), manifestBytes(cut.manifest));
        QVERIFY(parseManifest(manifestBytes(cut.manifest)) == cut.manifest);
        // Another sample: another hash.
        auto changed = train;
        changed.labels[22] = 0;
        QVERIFY(cutIntoShards("toy", changed, test, 10).manifest.train[2].sha256 != cut.manifest.train[2].sha256);
    }

    void badManifestsAreRefused_data()
    {
        QTest::addColumn<QString>("from");
        QTest::addColumn<QString>("to");
        QTest::addColumn<QString>("names");
        QTest::newRow("not JSON") << "{"
                                  << "["
                                  << "not valid JSON";
        QTest::newRow("newer format") << "\"rookery_dataset\": 1"
                                      << "\"rookery_dataset\": 2"
                                      << "newer format";
        QTest::newRow("bad hash") << "\"sha256\": \""
                                  << "\"sha256\": \"X"
                                  << "test[0].sha256"; // keys are sorted
        QTest::newRow("size not the samples'") << "\"bytes\": 45"
                                               << "\"bytes\": 46"
                                               << "test[0].bytes";
        QTest::newRow("no classes") << "\"classes\": 4"
                                    << "\"classes\": 1"
                                    << "classes";
        QTest::newRow("huge images") << "\"rows\": 3"
                                     << "\"rows\": 100000"
                                     << "rows";
    }

    void badManifestsAreRefused()
    {
        QFETCH(QString, from);
        QFETCH(QString, to);
        QFETCH(QString, names);
        const auto cut = cutIntoShards("toy", sample(12, 1), sample(3, 2), 10);
        auto text = QString::fromStdString(manifestBytes(cut.manifest));
        QVERIFY2(text.contains(from), qPrintable(text));
        text.replace(text.indexOf(from), from.size(), to);
        const QString error = errorOf([&] { parseManifest(text.toStdString()); });
        QVERIFY2(error.contains(names), qPrintable(error));
    }

    void badShardsAreRefused()
    {
        const auto cut = cutIntoShards("toy", sample(12, 1), sample(3, 2), 10);
        const auto &ref = cut.manifest.train[0];
        std::string wrongLabel = cut.shards[0];
        wrongLabel.back() = char(9); // 4 classes
        QVERIFY(errorOf([&] { decodeShard(cut.manifest, ref, wrongLabel); }).contains(QStringLiteral("label 9")));
        std::string wrongHeader = cut.shards[0];
        wrongHeader[15] = 9; // 9 columns, not 2
        QVERIFY(errorOf([&] { decodeShard(cut.manifest, ref, wrongHeader); }).contains(QStringLiteral("header")));
        QVERIFY(errorOf([&] {
                    decodeShard(cut.manifest, ref, cut.shards[0].substr(1));
                }).contains(QString::fromStdString(ref.sha256)));
    }

    // Clusters share the train shards out without overlap; more clusters than shards
    // share a shard and read disjoint slices of it.
    void clustersShareTheShards()
    {
        const auto cut = cutIntoShards("toy", sample(50, 1), sample(3, 2), 10); // 5 shards
        for (int count : {1, 2, 3, 5}) {
            std::multiset<size_t> seen;
            for (int index = 0; index < count; ++index) {
                const auto c = trainShardsFor(cut.manifest, {index, count});
                QCOMPARE(c.within.count, 1);
                seen.insert(c.train.begin(), c.train.end());
            }
            QCOMPARE(seen, (std::multiset<size_t>{0, 1, 2, 3, 4}));
        }
        std::set<std::pair<size_t, int>> slices;
        for (int index = 0; index < 12; ++index) {
            const auto c = trainShardsFor(cut.manifest, {index, 12});
            QCOMPARE(c.train.size(), size_t(1));
            QVERIFY(c.within.index < c.within.count);
            QVERIFY(slices.insert({c.train[0], c.within.index}).second);
            QCOMPARE(c.within.count, c.train[0] < 2 ? 3 : 2); // 12 clusters over 5 shards
        }
    }

    void storeKeepsOnlyWhatHashesToItsName()
    {
        QTemporaryDir dir;
        ShardStore store(dir.filePath(QStringLiteral("cache")).toStdString());
        const std::string bytes(100'000, 'x');
        const std::string sha = sha256Hex(bytes);
        // A download in three pieces, interrupted after the second: it resumes.
        store.appendPartial(sha, 0, std::string_view(bytes).substr(0, 40'000));
        {
            ShardStore reopened(store.directory());
            QCOMPARE(reopened.partialSize(sha), uint64_t(40'000));
            reopened.appendPartial(sha, 40'000, std::string_view(bytes).substr(40'000, 30'000));
        }
        QVERIFY_EXCEPTION_THROWN(store.appendPartial(sha, 99, "y"), Error); // not where it stopped
        store.appendPartial(sha, 70'000, std::string_view(bytes).substr(70'000));
        QVERIFY(!store.has(sha));
        QCOMPARE(store.commitPartial(sha, "test shard"), bytes);
        QVERIFY(store.has(sha));
        QCOMPARE(store.readRange(sha, 99'990, 100).bytes, std::string(10, 'x'));
        QCOMPARE(store.readRange(sha, 0, 10).total, uint64_t(100'000));

        // Received bytes that do not hash to the name: refused, naming both, not kept.
        const std::string other = sha256Hex("other");
        store.appendPartial(other, 0, "not other");
        const QString error = errorOf([&] { store.commitPartial(other, "shard 3 of toy"); });
        QVERIFY2(error.contains(QStringLiteral("shard 3 of toy")) && error.contains(QString::fromStdString(other)) &&
                     error.contains(QString::fromStdString(sha256Hex("not other"))),
                 qPrintable(error));
        QVERIFY(!store.has(other));
        QCOMPARE(store.partialSize(other), uint64_t(0));

        // A file damaged on disk is found at its next use, and deleted.
        {
            std::ofstream(store.pathOf(sha), std::ios::binary | std::ios::trunc) << "damaged";
        }
        QVERIFY(!store.readVerified(sha));
        QVERIFY(!store.has(sha));
        QVERIFY_EXCEPTION_THROWN(store.pathOf("../etc/passwd"), Error);
    }

    void storeEvictsTheLeastRecentlyUsed()
    {
        QTemporaryDir dir;
        ShardStore store(dir.path().toStdString(), 25'000);
        std::vector<std::string> shas;
        for (char c : {'a', 'b', 'c'}) {
            shas.push_back(store.put(std::string(10'000, c)));
            std::this_thread::sleep_for(std::chrono::milliseconds(20)); // distinct times
        }
        QVERIFY(store.readVerified(shas[0])); // 'a' used last now
        QCOMPARE(store.evict({}), uint64_t(20'000));
        QVERIFY(store.has(shas[0]) && !store.has(shas[1]) && store.has(shas[2]));
        // What is in use stays, even over the cap.
        ShardStore tight(dir.path().toStdString(), 1);
        QCOMPARE(tight.evict({shas[2]}), uint64_t(10'000));
        QVERIFY(tight.has(shas[2]) && !tight.has(shas[0]));
    }
};

QTEST_GUILESS_MAIN(TestDatasetShards)
#include "tst_dataset_shards.moc"
