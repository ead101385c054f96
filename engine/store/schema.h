// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>

#include "engine/store/sqlite_db.h"

namespace rookery::store {

/// The newest schema this build knows. Each version has one migration step.
inline constexpr int kSchemaVersion = 5;
/// Stored in the SQLite header (PRAGMA application_id): "Rook".
inline constexpr int kApplicationId = 0x526F6F6B;

/// Opens Rookery's database, creating it when missing, after checking an existing file
/// read-only: it must be an SQLite file, be Rookery's, pass PRAGMA integrity_check and
/// have a schema version this build knows. Any failure throws rookery::Error that says
/// what is wrong and what to do, and leaves the file exactly as it was. Then sets WAL
/// and full sync, and migrates step by step, each step in its own transaction.
///
/// Thread safety: returns a connection for the calling thread.
Database openRookeryDatabase(const std::filesystem::path &path);

/// The schema version recorded in an open Rookery database.
int schemaVersion(Database &db);

} // namespace rookery::store
