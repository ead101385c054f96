// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/paths.h"

#include <cstdlib>
#include <system_error>

#include "engine/common/error.h"

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

void ensurePrivateDirectory(const fs::path &dir)
{
    std::error_code ec;
    if (fs::exists(dir, ec)) {
        if (!fs::is_directory(dir, ec))
            throw Error(dir.string() + " exists but is not a directory; choose another --data-dir");
        return;
    }
    fs::create_directories(dir, ec);
    if (ec)
        throw Error("cannot create directory " + dir.string() + ": " + ec.message());
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
}

} // namespace rookery
