// SPDX-License-Identifier: GPL-3.0-or-later
// The volunteer's contribution per day in SQLite: today and in total, across reopening,
// and in a database written before the table existed.
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/error.h"
#include "engine/store/contribution_store.h"
#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"

using namespace rookery;
namespace fs = std::filesystem;

class TestContributionStore : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    fs::path dbPath(const char *name) const { return fs::path(m_dir.path().toStdString()) / name; }

private Q_SLOTS:
    void addsUpTodayAndInTotal()
    {
        store::ContributionStore s(dbPath("a.db"));
        QCOMPARE(s.totals("2026-05-02"), store::ContributionTotals{});
        s.add("2026-05-01", 100, 3.5);
        s.add("2026-05-02", 40, 1.0);
        s.add("2026-05-02", 24, 0.5);
        const auto t = s.totals("2026-05-02");
        QCOMPARE(t.samplesToday, int64_t(64));
        QCOMPARE(t.samplesTotal, int64_t(164));
        QCOMPARE(t.computeSecondsToday, 1.5);
        QCOMPARE(t.computeSecondsTotal, 5.0);
        QCOMPARE(s.totals("2026-05-03").samplesToday, int64_t(0)); // a new day starts at zero
        QCOMPARE(s.totals("2026-05-03").samplesTotal, int64_t(164));
    }

    void survivesReopening()
    {
        {
            store::ContributionStore s(dbPath("reopen.db"));
            s.add("2026-05-01", 640, 12.25);
        }
        store::ContributionStore s(dbPath("reopen.db"));
        QCOMPARE(s.totals("2026-05-01").samplesTotal, int64_t(640));
        QCOMPARE(s.totals("2026-05-01").computeSecondsToday, 12.25);
    }

    void refusesNegativeFigures()
    {
        store::ContributionStore s(dbPath("neg.db"));
        QVERIFY_THROWS_EXCEPTION(Error, s.add("2026-05-01", -1, 0));
        QVERIFY_THROWS_EXCEPTION(Error, s.add("2026-05-01", 0, -0.5));
        QCOMPARE(s.totals("2026-05-01"), store::ContributionTotals{});
    }

    // A database from a build that knew schema version 3 gets the table by migration.
    void migratesFromVersion3()
    {
        const fs::path path = dbPath("v3.db");
        {
            store::Database db = store::openRookeryDatabase(path);
            db.exec("DROP TABLE contributions; UPDATE meta SET value = '3' WHERE key = 'schema_version'");
        }
        store::ContributionStore s(path);
        s.add("2026-05-01", 1, 1);
        QCOMPARE(s.totals("2026-05-01").samplesTotal, int64_t(1));
        store::Database db(path, store::Database::Access::ReadOnly);
        QCOMPARE(store::schemaVersion(db), store::kSchemaVersion);
    }

    void namesTheLocalDay()
    {
        const QString day = QString::fromStdString(store::ContributionStore::localDay(1'777'777'777'000));
        QVERIFY2(QRegularExpression(QStringLiteral("^20\\d\\d-\\d\\d-\\d\\d$")).match(day).hasMatch(), qPrintable(day));
        // Days change with the date, not with every call.
        QCOMPARE(store::ContributionStore::localDay(1'777'777'777'000),
                 store::ContributionStore::localDay(1'777'777'777'000 + 1000));
    }
};

QTEST_APPLESS_MAIN(TestContributionStore)
#include "tst_contribution_store.moc"
