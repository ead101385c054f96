// SPDX-License-Identifier: GPL-3.0-or-later
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "engine/common/error.h"
#include "engine/data/idx_file.h"
#include "engine/data/image_dataset.h"
#include "tests/support/test_support.h"

using namespace rookery;
namespace fs = std::filesystem;

namespace {

std::vector<unsigned char> idxBytes(std::vector<uint32_t> dims, size_t dataBytes, unsigned char type = 0x08)
{
    std::vector<unsigned char> b = {0, 0, type, static_cast<unsigned char>(dims.size())};
    for (auto d : dims)
        for (int shift = 24; shift >= 0; shift -= 8)
            b.push_back(static_cast<unsigned char>(d >> shift));
    for (size_t i = 0; i < dataBytes; ++i)
        b.push_back(static_cast<unsigned char>(i % 10));
    return b;
}

} // namespace

class TestIdxFile : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void readsValidFile()
    {
        QTemporaryDir dir;
        const fs::path path = dir.filePath(QStringLiteral("ok.gz")).toStdString();
        test::writeGzip(path, idxBytes({3, 2, 2}, 12));
        const auto a = data::readIdxFile(path, 3);
        QCOMPARE(a.dims, (std::vector<uint32_t>{3, 2, 2}));
        QCOMPARE(a.values.size(), size_t(12));
        QCOMPARE(int(a.values[11]), 1);
    }

    void readsUncompressedFile()
    {
        QTemporaryDir dir;
        const fs::path path = dir.filePath(QStringLiteral("plain.idx")).toStdString();
        const auto bytes = idxBytes({5}, 5);
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), long(bytes.size()));
        QCOMPARE(data::readIdxFile(path, 1).values.size(), size_t(5));
    }

    void rejectsBadFiles_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<int>("dims");
        QTest::addColumn<QString>("mentions");
        auto bytes = [](std::vector<unsigned char> v) {
            return QByteArray(reinterpret_cast<const char *>(v.data()), qsizetype(v.size()));
        };
        QTest::newRow("empty") << QByteArray() << 1 << "shorter than the 4-byte IDX header";
        QTest::newRow("foreign magic") << QByteArray("PK\x03\x04 zip file") << 1 << "not an unsigned-byte IDX file";
        QTest::newRow("float type") << bytes(idxBytes({4}, 16, 0x0D)) << 1 << "not an unsigned-byte IDX file";
        QTest::newRow("wrong dims") << bytes(idxBytes({2, 2}, 4)) << 1 << "has 2 dimensions, expected 1";
        QTest::newRow("zero dim") << bytes(idxBytes({0, 3}, 0)) << 2 << "is zero";
        QTest::newRow("truncated data") << bytes(idxBytes({10, 10}, 60)) << 2 << "truncated: expected 100 bytes";
        QTest::newRow("truncated header") << bytes(idxBytes({10}, 0)).left(6) << 1 << "truncated inside the header";
        QTest::newRow("extra data") << bytes(idxBytes({4}, 9)) << 1 << "has data after";
        QTest::newRow("huge") << bytes(idxBytes({60000, 60000, 60000}, 0)) << 3 << "refusing";
    }

    void rejectsBadFiles()
    {
        QFETCH(QByteArray, content);
        QFETCH(int, dims);
        QFETCH(QString, mentions);
        QTemporaryDir dir;
        const fs::path path = dir.filePath(QStringLiteral("bad.gz")).toStdString();
        test::writeGzip(path, std::vector<unsigned char>(content.begin(), content.end()));
        try {
            data::readIdxFile(path, dims);
            QFAIL("expected an error");
        } catch (const Error &e) {
            const QString msg = QString::fromUtf8(e.what());
            QVERIFY2(msg.contains(mentions), e.what());
            QVERIFY2(msg.contains(QString::fromStdString(path.string())), "the message names the file");
        }
    }

    void rejectsCorruptGzip()
    {
        QTemporaryDir dir;
        const fs::path path = dir.filePath(QStringLiteral("corrupt.gz")).toStdString();
        test::writeGzip(path, idxBytes({1000}, 1000));
        auto raw = test::readFileBytes(path);
        for (size_t i = 20; i < raw.size() - 8; i += 7)
            raw[i] = char(raw[i] ^ 0x5A);
        std::ofstream(path, std::ios::binary | std::ios::trunc).write(raw.data(), long(raw.size()));
        QVERIFY_THROWS_EXCEPTION(Error, data::readIdxFile(path, 1));
    }

    void missingFileSaysHowToGetIt()
    {
        try {
            data::loadFashionMnist("/nonexistent/dir", data::Split::Train);
            QFAIL("expected an error");
        } catch (const Error &e) {
            const QString msg = QString::fromUtf8(e.what());
            QVERIFY(msg.contains(QStringLiteral("/nonexistent/dir/train-images-idx3-ubyte.gz")));
            QVERIFY(msg.contains(QStringLiteral("dataset-fashion-mnist")));
        }
    }

    void loadsRealFashionMnist()
    {
        const auto train = data::loadFashionMnist(test::fashionMnistDir(), data::Split::Train);
        QCOMPARE(train.count, int64_t(60000));
        QCOMPARE(train.pixels.size(), size_t(60000 * 28 * 28));
        const auto test = data::loadFashionMnist(test::fashionMnistDir(), data::Split::Test);
        QCOMPARE(test.count, int64_t(10000));
        std::vector<int> histogram(10);
        for (auto l : test.labels)
            ++histogram[l];
        for (int c : histogram)
            QCOMPARE(c, 1000); // the test set is balanced
    }

    void labelsAndImagesMustAgree()
    {
        QTemporaryDir dir;
        const fs::path d = dir.path().toStdString();
        test::writeGzip(d / "t10k-images-idx3-ubyte.gz", idxBytes({3, 28, 28}, 3 * 784));
        test::writeGzip(d / "t10k-labels-idx1-ubyte.gz", idxBytes({4}, 4));
        QVERIFY_THROWS_EXCEPTION(Error, data::loadFashionMnist(d, data::Split::Test));
        test::writeGzip(d / "t10k-labels-idx1-ubyte.gz", {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 12});
        try {
            data::loadFashionMnist(d, data::Split::Test);
            QFAIL("expected an error");
        } catch (const Error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("label 12")), e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestIdxFile)
#include "tst_idx_file.moc"
