// SPDX-License-Identifier: GPL-3.0-or-later
// The data directory holds a private key and a database: a new one is made private, an
// existing one open to others is made private, and one that is not ours is refused.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include "engine/common/error.h"
#include "engine/common/paths.h"

using namespace rookery;
namespace fs = std::filesystem;

namespace {

unsigned modeOf(const fs::path &p)
{
    struct stat st = {};
    if (::stat(p.c_str(), &st) != 0)
        return 0;
    return unsigned(st.st_mode & 07777);
}

} // namespace

class TestPaths : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aNewDirectoryIsPrivate()
    {
        QTemporaryDir tmp;
        const fs::path dir = fs::path(tmp.path().toStdString()) / "a" / "b";
        ensurePrivateDirectory(dir);
        QCOMPARE(modeOf(dir), 0700u);
    }

    void anOpenDirectoryIsMadePrivate()
    {
        QTemporaryDir tmp;
        const fs::path dir = fs::path(tmp.path().toStdString()) / "data";
        fs::create_directory(dir);
        ::chmod(dir.c_str(), 0755);
        std::ofstream(dir / "rookery.db") << "kept";
        ensurePrivateDirectory(dir);
        QCOMPARE(modeOf(dir), 0700u);
        std::ifstream in(dir / "rookery.db");
        std::string text;
        in >> text;
        QCOMPARE(text, std::string("kept")); // what was there stays
    }

    void aFileIsNotADirectory()
    {
        QTemporaryDir tmp;
        const fs::path file = fs::path(tmp.path().toStdString()) / "file";
        std::ofstream(file) << "x";
        QVERIFY_THROWS_EXCEPTION(Error, ensurePrivateDirectory(file));
    }

    void anotherUsersDirectoryIsRefused()
    {
        if (::geteuid() != 0)
            QSKIP("giving a directory to another user needs root");
        QTemporaryDir tmp;
        const fs::path dir = fs::path(tmp.path().toStdString()) / "theirs";
        fs::create_directory(dir);
        QCOMPARE(::chown(dir.c_str(), 65534, 65534), 0);
        try {
            ensurePrivateDirectory(dir);
            QFAIL("a directory of another user was accepted");
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find("belongs to another user") != std::string::npos, e.what());
        }
        QCOMPARE(::chown(dir.c_str(), 0, 0), 0); // so that QTemporaryDir can remove it
    }
};

QTEST_APPLESS_MAIN(TestPaths)
#include "tst_paths.moc"
