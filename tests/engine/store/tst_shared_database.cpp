// SPDX-License-Identifier: GPL-3.0-or-later
// One database, several connections and processes: the coordinator holds its database
// open while `rookery-coordinator invite` writes to it from a process of its own, and
// the coordinator itself opens further connections as it runs. A second connection in
// a process must never leave the first one unlocked, or the other process takes it for
// the last user of the file, checkpoints and removes the write-ahead log under it, and
// the database is corrupt (seen: "wrong # of entries in index" after an invite).
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"

using namespace rookery;
namespace fs = std::filesystem;

namespace {

// In another process (this program run again, with --touch): what `rookery-coordinator
// invite` does, a connection of its own that writes and closes. On its close SQLite
// checkpoints and deletes the write-ahead log when no other process holds a lock.
// (A fork would not do: the child would share the parent's record of its locks.)
int touchFromAnotherProcess(const fs::path &path)
{
    const std::string self = QCoreApplication::applicationFilePath().toStdString();
    const pid_t child = fork();
    if (child == 0) {
        execl(self.c_str(), self.c_str(), "--touch", path.c_str(), static_cast<char *>(nullptr));
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int touch(const char *path)
{
    sqlite3 *db = nullptr;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nullptr);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "INSERT INTO t VALUES (7)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : 1;
}

} // namespace

class TestSharedDatabase : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aSecondConnectionKeepsTheFirstOnesLocks()
    {
        QTemporaryDir dir;
        const fs::path path = dir.filePath(QStringLiteral("rookery.db")).toStdString();
        auto first = store::openRookeryDatabase(path);
        first.exec("CREATE TABLE t (x INTEGER)");
        first.exec("INSERT INTO t VALUES (1)");
        const fs::path wal = path.string() + "-wal";
        QVERIFY(fs::exists(wal));
        // A second connection in this process, opened and closed.
        {
            auto second = store::openRookeryDatabase(path);
        }
        QCOMPARE(touchFromAnotherProcess(path), 0);
        // The first connection's locks held: the other process left the log alone.
        QVERIFY2(fs::exists(wal), "another process removed the write-ahead log of an open database");
        first.exec("INSERT INTO t VALUES (2)");
        QCOMPARE(first.scalarText("PRAGMA integrity_check").value_or(""), std::string("ok"));
        QCOMPARE(first.scalarInt("SELECT count(*) FROM t").value_or(0), int64_t(3));
    }
};

int main(int argc, char **argv)
{
    if (argc == 3 && std::string_view(argv[1]) == "--touch")
        return touch(argv[2]);
    QCoreApplication app(argc, argv);
    TestSharedDatabase test;
    return QTest::qExec(&test, argc, argv);
}
#include "tst_shared_database.moc"
