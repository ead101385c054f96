// SPDX-License-Identifier: GPL-3.0-or-later
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "engine/common/error.h"
#include "engine/store/profile_cache.h"

using namespace rookery;
namespace fs = std::filesystem;

class TestProfileCache : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    fs::path dbPath(const char *name) const { return fs::path(m_dir.path().toStdString()) / name; }

private Q_SLOTS:
    void newestPerKey()
    {
        store::ProfileCache c(dbPath("a.db"));
        QVERIFY(!c.newest("k1"));
        c.save({"k1", 100, R"({"v":1})"});
        c.save({"k1", 300, R"({"v":3})"});
        c.save({"k1", 200, R"({"v":2})"});
        c.save({"k2", 50, R"({"other":true})"});
        const auto k1 = c.newest("k1").value();
        QCOMPARE(k1.measuredAtMs, int64_t(300));
        QCOMPARE(k1.json, std::string(R"({"v":3})"));
        QCOMPARE(k1.hardwareKey, std::string("k1"));
        QCOMPARE(c.newest("k2")->json, std::string(R"({"other":true})"));
        QVERIFY(!c.newest("k3"));
        QCOMPARE(c.count(), int64_t(4));
    }

    void prunesOldProfilesOfTheSameKey()
    {
        store::ProfileCache c(dbPath("prune.db"));
        for (int i = 1; i <= 6; ++i)
            c.save({"k", i * 10, "{}"}, 2);
        c.save({"other", 1, "{}"}, 2);
        QCOMPARE(c.count("k"), int64_t(2));
        QCOMPARE(c.count(), int64_t(3));
        QCOMPARE(c.newest("k")->measuredAtMs, int64_t(60));
        QVERIFY_THROWS_EXCEPTION(Error, c.save({"k", 70, "{}"}, 0));
    }

    void survivesReopening()
    {
        {
            store::ProfileCache c(dbPath("reopen.db"));
            c.save({"k", 42, "{\"x\":1}"});
        }
        store::ProfileCache c(dbPath("reopen.db"));
        QCOMPARE(c.newest("k")->measuredAtMs, int64_t(42));
    }

    void refusesAForeignFile()
    {
        const fs::path path = dbPath("notes.db");
        std::ofstream(path) << "not a database\n";
        QVERIFY_THROWS_EXCEPTION(Error, store::ProfileCache c(path));
    }
};

QTEST_APPLESS_MAIN(TestProfileCache)
#include "tst_profile_cache.moc"
