// SPDX-License-Identifier: GPL-3.0-or-later
// Acceptance: a corrupt dataset file, a corrupt database and a database from a newer
// schema each give a clear error and a non-zero exit, and leave the database untouched.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "engine/store/checkpoint_store.h"
#include "engine/store/sqlite_db.h"
#include "tests/support/test_support.h"

using namespace rookery;
namespace fs = std::filesystem;

class TestNodeBadInput : public QObject
{
    Q_OBJECT

    QTemporaryDir m_root;

    QStringList args(const QString &dataDir, const QString &datasetDir) const
    {
        return {QStringLiteral("--data-dir"),      dataDir,
                QStringLiteral("--dataset-dir"),   datasetDir,
                QStringLiteral("--steps"),         QStringLiteral("20"),
                QStringLiteral("--train-samples"), QStringLiteral("1000"),
                QStringLiteral("--threads"),       QStringLiteral("1")};
    }

    // A data directory holding a real database with two checkpoints.
    QString makeDataDir(const QString &name)
    {
        const QString dir = m_root.filePath(name);
        QString out, err;
        const int code = test::runProgram(test::programPath(QStringLiteral("rookery-node")),
                                          args(dir, QString::fromStdString(test::fashionMnistDir().string())) +
                                              QStringList{QStringLiteral("--checkpoint-every"), QStringLiteral("10")},
                                          &out, &err);
        if (code != 0)
            qWarning("%s", qPrintable(err));
        return dir;
    }

    QString copyDataset(const QString &name)
    {
        const fs::path dir = m_root.filePath(name).toStdString();
        fs::create_directories(dir);
        for (const auto &entry : fs::directory_iterator(test::fashionMnistDir()))
            fs::copy_file(entry.path(), dir / entry.path().filename());
        return QString::fromStdString(dir.string());
    }

private Q_SLOTS:
    void badInputFailsCleanly_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("corrupt dataset") << "dataset"
                                         << "t10k-labels-idx1-ubyte.gz";
        QTest::newRow("truncated dataset") << "truncated-dataset"
                                           << "train-images-idx3-ubyte.gz";
        QTest::newRow("corrupt database") << "database"
                                          << "damaged";
        QTest::newRow("newer schema") << "newer"
                                      << "newer Rookery";
        QTest::newRow("not a database") << "text"
                                        << "not an SQLite file";
    }

    void badInputFailsCleanly()
    {
        QFETCH(QString, kind);
        QFETCH(QString, mentions);
        const QString dataDir = makeDataDir(kind);
        const fs::path db = dataDir.toStdString() + "/rookery.db";
        QVERIFY(fs::exists(db));
        QString datasetDir = QString::fromStdString(test::fashionMnistDir().string());
        {
            store::Database d(db, store::Database::Access::ReadWrite);
            d.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        }
        if (kind == QStringLiteral("dataset")) {
            datasetDir = copyDataset(QStringLiteral("ds-") + kind);
            std::ofstream(datasetDir.toStdString() + "/t10k-labels-idx1-ubyte.gz", std::ios::trunc) << "garbage";
        } else if (kind == QStringLiteral("truncated-dataset")) {
            datasetDir = copyDataset(QStringLiteral("ds-") + kind);
            const fs::path f = datasetDir.toStdString() + "/train-images-idx3-ubyte.gz";
            fs::resize_file(f, fs::file_size(f) / 3);
        } else if (kind == QStringLiteral("database")) {
            auto bytes = test::readFileBytes(db);
            for (size_t i = 4096; i + 4096 <= bytes.size(); i += 4096)
                std::fill(bytes.begin() + long(i) + 100, bytes.begin() + long(i) + 400, char(0x3C));
            std::ofstream(db, std::ios::binary | std::ios::trunc).write(bytes.data(), long(bytes.size()));
        } else if (kind == QStringLiteral("newer")) {
            store::Database d(db, store::Database::Access::ReadWrite);
            d.exec("UPDATE meta SET value = '42' WHERE key = 'schema_version'");
            d.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        } else if (kind == QStringLiteral("text")) {
            std::ofstream(db, std::ios::trunc) << "not a database";
        }
        const auto before = test::readFileBytes(db);

        QString out, err;
        const int code =
            test::runProgram(test::programPath(QStringLiteral("rookery-node")), args(dataDir, datasetDir), &out, &err);
        QCOMPARE(code, 1);
        QVERIFY2(err.contains(mentions), qPrintable(err));
        QVERIFY2(err.startsWith(QStringLiteral("rookery-node: error:")), qPrintable(err));
        QVERIFY2(test::readFileBytes(db) == before, "the database file must be untouched");
    }

    void badCommandLineExitsWith2()
    {
        QString out, err;
        QCOMPARE(test::runProgram(test::programPath(QStringLiteral("rookery-node")), {QStringLiteral("--steps=-1")},
                                  &out, &err),
                 2);
        QVERIFY2(err.contains(QStringLiteral("--steps")), qPrintable(err));
        QCOMPARE(test::runProgram(test::programPath(QStringLiteral("rookery-node")), {QStringLiteral("--bogus")}, &out,
                                  &err),
                 2);
        QVERIFY(err.contains(QStringLiteral("--help")));
        QCOMPARE(
            test::runProgram(test::programPath(QStringLiteral("rookery-node")), {QStringLiteral("--help")}, &out, &err),
            0);
        QVERIFY(out.contains(QStringLiteral("--checkpoint-every")));
    }
};

QTEST_GUILESS_MAIN(TestNodeBadInput)
#include "tst_node_bad_input.moc"
