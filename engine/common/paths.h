// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>

namespace rookery {

/// Where Rookery keeps its state when no --data-dir is given:
/// $XDG_DATA_HOME/rookery, else $HOME/.local/share/rookery, else ./rookery-data.
///
/// Thread safety: reads the environment; call before starting threads that change it.
std::filesystem::path defaultDataDir();

/// Where Debian's dataset-fashion-mnist package puts the data set.
std::filesystem::path defaultFashionMnistDir();

/// Creates the directory (and parents) with mode 0700 if it is missing. An existing one
/// must belong to this user; if others may read it, it is made 0700 (with a warning in
/// the log). Throws rookery::Error naming the path if that fails, if it is not a
/// directory, or if it belongs to another user.
void ensurePrivateDirectory(const std::filesystem::path &dir);

/// Writes `text` to `path` with mode 0600, through a temporary file (created 0600,
/// synced) and a rename, so a reader sees the old text or the new, never a mix.
/// Throws rookery::Error naming the file.
void writePrivateFile(const std::filesystem::path &path, const std::string &text);
/// Reads a private file; throws rookery::Error when others may read it (any group or
/// world permission bit), naming the file and the chmod that fixes it.
std::string readPrivateFile(const std::filesystem::path &path);

} // namespace rookery
