// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/paths.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/common/error.h"
#include "engine/common/log.h"

namespace fs = std::filesystem;

namespace rookery {

fs::path defaultDataDir()
{
    if (const char *xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
        return fs::path(xdg) / "rookery";
    if (const char *home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".local" / "share" / "rookery";
    return fs::path("rookery-data");
}

fs::path defaultFashionMnistDir()
{
    if (const char *dir = std::getenv("ROOKERY_FASHION_MNIST_DIR"); dir && *dir)
        return dir;
    return "/usr/share/datasets/fashion-mnist";
}

namespace {

// An existing directory holds a private key and a database: it must be this user's and
// no one else's. One that others may read is made private, and the log says so.
void tightenDirectory(const fs::path &dir)
{
    struct stat st = {};
    if (::stat(dir.c_str(), &st) != 0)
        throw Error("cannot read the permissions of " + dir.string() + ": " + std::strerror(errno));
    if (st.st_uid != ::geteuid())
        throw Error(dir.string() + " belongs to another user (uid " + std::to_string(st.st_uid) +
                    "); Rookery keeps its key and database only in a directory of your own: choose another "
                    "--data-dir");
    if ((st.st_mode & 077) == 0)
        return;
    if (::chmod(dir.c_str(), 0700) != 0)
        throw Error(dir.string() + " is open to other users and cannot be made private: " + std::strerror(errno));
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    log::warning("store", dir.string() + " was open to other users (mode " + mode +
                              "); it holds this node's key, so it is now 0700");
}

} // namespace

void ensurePrivateDirectory(const fs::path &dir)
{
    std::error_code ec;
    if (fs::exists(dir, ec)) {
        if (!fs::is_directory(dir, ec))
            throw Error(dir.string() + " exists but is not a directory; choose another --data-dir");
        tightenDirectory(dir);
        return;
    }
    fs::create_directories(dir, ec);
    if (ec)
        throw Error("cannot create directory " + dir.string() + ": " + ec.message());
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
}

void writePrivateFile(const fs::path &path, const std::string &text)
{
    const auto tmp = path.string() + ".tmp";
    ::unlink(tmp.c_str());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        throw Error("cannot create " + tmp + ": " + std::strerror(errno));
    const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
        ::unlink(tmp.c_str());
        throw Error("cannot write " + path.string() + ": " + std::strerror(errno));
    }
}

std::string readPrivateFile(const fs::path &path)
{
    struct stat st = {};
    if (::stat(path.c_str(), &st) != 0)
        throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        throw Error(path.string() + " is not a regular file");
    if (st.st_mode & 077) {
        char mode[8];
        std::snprintf(mode, sizeof(mode), "%04o", unsigned(st.st_mode & 07777));
        throw Error("refusing to use " + path.string() + ": other users may read it (mode " + mode +
                    "); run 'chmod 600 " + path.string() + "'");
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (!in || !(text << in.rdbuf()))
        throw Error("cannot read " + path.string());
    return text.str();
}

} // namespace rookery
