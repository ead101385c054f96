// SPDX-License-Identifier: GPL-3.0-or-later
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "engine/common/error.h"
#include "engine/model/model_zoo.h"
#include "engine/store/checkpoint_store.h"
#include "engine/store/checkpoint_writer.h"
#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"
#include "tests/support/test_support.h"

using namespace rookery;
namespace fs = std::filesystem;

namespace {

NamedTensor tensor(const std::string &name, std::vector<int64_t> shape, float seed)
{
    NamedTensor t;
    t.name = name;
    t.shape = std::move(shape);
    const auto n = size_t(t.elements());
    std::vector<float> values(n);
    for (size_t i = 0; i < n; ++i)
        values[i] = seed * float(i) - 1.0f / float(i + 1); // not round numbers
    t.data.resize(n * 4);
    std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
}

train::TrainingState sampleState(int64_t step)
{
    train::TrainingState s;
    s.model = model::mlpSpec();
    s.optimizer.kind = train::OptimizerKind::AdamW;
    s.optimizer.learningRate = 0.001;
    s.batchSize = 32;
    s.seed = 99;
    s.step = step;
    s.cursor = {2, 640};
    s.rngState = {1, 2, 3, 250};
    s.parameters = {tensor("1.weight", {512, 784}, 0.5f + float(step)), tensor("1.bias", {512}, 0.25f)};
    s.optimizerState = {tensor("1.weight.exp_avg", {512, 784}, 1.5f), tensor("1.bias.exp_avg", {512}, 2.5f)};
    NamedTensor stepTensor{"step", DType::Int64, {}, std::vector<uint8_t>(8)};
    std::memcpy(stepTensor.data.data(), &step, 8);
    s.optimizerState.push_back(stepTensor);
    return s;
}

void expectError(const std::function<void()> &fn, const QString &mentions)
{
    try {
        fn();
        QFAIL("expected rookery::Error");
    } catch (const Error &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(mentions), e.what());
    }
}

} // namespace

class TestCheckpointStore : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    fs::path dbPath(const char *name) const { return fs::path(m_dir.path().toStdString()) / name; }

private Q_SLOTS:
    void saveThenLoadIsBitExact()
    {
        store::CheckpointStore s(dbPath("exact.db"));
        const auto state = sampleState(100);
        const int64_t id = s.save("run", state, 3);
        const auto loaded = s.load(id);
        QCOMPARE(loaded.state.parameters, state.parameters);
        QCOMPARE(loaded.state.optimizerState, state.optimizerState);
        QCOMPARE(loaded.state.step, int64_t(100));
        QCOMPARE(loaded.state.cursor, state.cursor);
        QCOMPARE(loaded.state.rngState, state.rngState);
        QCOMPARE(loaded.state.model, state.model);
        QCOMPARE(loaded.state.optimizer, state.optimizer);
        QCOMPARE(loaded.state.batchSize, int64_t(32));
        QCOMPARE(loaded.state.seed, uint64_t(99));
        QCOMPARE(loaded.info.modelName, std::string("mlp"));
        QVERIFY(loaded.info.bytes > 512 * 784 * 4 * 2);
    }

    void keepsNewestNPerRun()
    {
        store::CheckpointStore s(dbPath("keep.db"));
        for (int step = 1; step <= 6; ++step)
            s.save("a", sampleState(step), 3);
        s.save("b", sampleState(50), 3);
        const auto a = s.list("a");
        QCOMPARE(a.size(), size_t(3));
        QCOMPARE(a.front().step, int64_t(6));
        QCOMPARE(a.back().step, int64_t(4));
        QCOMPARE(s.list().size(), size_t(4));
        QCOMPARE(s.loadNewest("a")->state.step, int64_t(6));
        QVERIFY(!s.loadNewest("nothing"));
        // Tensors of pruned checkpoints go too.
        store::Database db(dbPath("keep.db"), store::Database::Access::ReadOnly);
        QCOMPARE(db.scalarInt("SELECT count(DISTINCT checkpoint_id) FROM checkpoint_tensors").value(), int64_t(4));
    }

    void removeDeletesOne()
    {
        store::CheckpointStore s(dbPath("remove.db"));
        const int64_t first = s.save("r", sampleState(1), 5);
        s.save("r", sampleState(2), 5);
        QVERIFY(s.remove(first));
        QVERIFY(!s.remove(first));
        QCOMPARE(s.list("r").size(), size_t(1));
        expectError([&] { s.load(first); }, QStringLiteral("no checkpoint"));
    }

    // A checkpoint commits whole or not at all: make the database refuse the last
    // tensor row and check that nothing of that checkpoint remains.
    void failedSaveLeavesNoPartialCheckpoint()
    {
        const fs::path path = dbPath("atomic.db");
        {
            store::CheckpointStore s(path);
            s.save("r", sampleState(1), 5);
        }
        {
            store::Database db(path, store::Database::Access::ReadWrite);
            db.exec("CREATE TRIGGER poison BEFORE INSERT ON checkpoint_tensors WHEN NEW.name = 'step' "
                    "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
        }
        store::CheckpointStore s(path);
        QVERIFY_THROWS_EXCEPTION(Error, s.save("r", sampleState(2), 5));
        const auto list = s.list("r");
        QCOMPARE(list.size(), size_t(1));
        QCOMPARE(list.front().step, int64_t(1));
        store::Database db(path, store::Database::Access::ReadOnly);
        QCOMPARE(db.scalarInt("SELECT count(*) FROM checkpoint_tensors WHERE checkpoint_id NOT IN "
                              "(SELECT id FROM checkpoints)")
                     .value(),
                 int64_t(0));
    }

    void writerCoalescesAndFlushes()
    {
        store::CheckpointStore s(dbPath("writer.db"));
        std::atomic<int> saved{0};
        {
            store::CheckpointWriter w(s, "w", 10, {nullptr, [&](const store::CheckpointInfo &) { ++saved; }, nullptr});
            for (int step = 1; step <= 20; ++step)
                w.submit(sampleState(step));
            w.flush();
            QCOMPARE(w.lastSavedStep(), int64_t(20)); // the newest always lands
        }
        QVERIFY(saved >= 1 && saved <= 20);
        QCOMPARE(s.loadNewest("w")->state.step, int64_t(20));
    }

    void newDatabaseHasSchemaAndWal()
    {
        store::Database db = store::openRookeryDatabase(dbPath("fresh.db"));
        QCOMPARE(store::schemaVersion(db), store::kSchemaVersion);
        QCOMPARE(db.scalarText("PRAGMA journal_mode").value(), std::string("wal"));
        QCOMPARE(db.scalarInt("PRAGMA application_id").value(), int64_t(store::kApplicationId));
    }

    void migratesFromVersion1()
    {
        const fs::path path = dbPath("v1.db");
        {
            store::CheckpointStore s(path);
            s.save("old", sampleState(7), 3);
        }
        {
            // Make it look like a database written by a build that knew only version 1.
            store::Database db(path, store::Database::Access::ReadWrite);
            db.exec("DROP TABLE device_profiles; UPDATE meta SET value = '1' WHERE key = 'schema_version'");
        }
        store::CheckpointStore s(path);
        QCOMPARE(s.loadNewest("old")->state.step, int64_t(7));
        store::Database db(path, store::Database::Access::ReadOnly);
        QCOMPARE(store::schemaVersion(db), store::kSchemaVersion);
        QVERIFY(db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'device_profiles'").value() == 1);
    }

    // Acceptance: a corrupt database, a foreign file and a database from a newer schema
    // each give a clear error and leave the file untouched.
    void refusesBadDatabasesUntouched_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("newer schema") << "newer"
                                      << "newer Rookery";
        QTest::newRow("corrupt pages") << "corrupt"
                                       << "damaged";
        QTest::newRow("truncated") << "truncated"
                                   << "damaged";
        QTest::newRow("not sqlite") << "text"
                                    << "not an SQLite file";
        QTest::newRow("someone else's sqlite") << "foreign"
                                               << "not Rookery's";
    }

    void refusesBadDatabasesUntouched()
    {
        QFETCH(QString, kind);
        QFETCH(QString, mentions);
        const fs::path path = dbPath(("bad-" + kind.toStdString() + ".db").c_str());
        if (kind == QStringLiteral("text")) {
            std::ofstream(path) << "these are my notes, not a database\n";
        } else if (kind == QStringLiteral("foreign")) {
            store::Database db(path, store::Database::Access::ReadWriteCreate);
            db.exec("CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('x')");
        } else {
            {
                store::CheckpointStore s(path);
                for (int i = 1; i <= 3; ++i)
                    s.save("r", sampleState(i), 5);
            }
            store::Database db(path, store::Database::Access::ReadWrite);
            db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
            if (kind == QStringLiteral("newer"))
                db.exec("UPDATE meta SET value = '999' WHERE key = 'schema_version'");
        }
        if (kind == QStringLiteral("corrupt")) {
            auto bytes = test::readFileBytes(path);
            for (size_t i = 4096 * 2; i < bytes.size(); i += 4096)
                for (size_t j = 0; j < 64; ++j)
                    bytes[i + j] = char(0xA5);
            std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), long(bytes.size()));
        } else if (kind == QStringLiteral("truncated")) {
            fs::resize_file(path, fs::file_size(path) / 2);
        }
        const auto before = test::readFileBytes(path);
        QVERIFY(!before.empty());
        expectError([&] { store::CheckpointStore s(path); }, mentions);
        expectError([&] { store::CheckpointStore s(path); }, QStringLiteral("left untouched"));
        QVERIFY2(test::readFileBytes(path) == before, "the file must not change");
    }
};

QTEST_APPLESS_MAIN(TestCheckpointStore)
#include "tst_checkpoint_store.moc"
