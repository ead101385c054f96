// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/store/schema.h"

#include <array>
#include <functional>

#include "engine/common/error.h"
#include "engine/common/log.h"

namespace fs = std::filesystem;

namespace rookery::store {
namespace {

constexpr const char *kUntouched = " The file was left untouched; move it away to start afresh, or choose another "
                                   "--data-dir.";

// Step N takes the schema from version N-1 to N.
const std::array<std::function<void(Database &)>, kSchemaVersion> kMigrations = {
    // 1: checkpoints.
    [](Database &db) {
        db.exec(R"sql(
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE checkpoints (
                id INTEGER PRIMARY KEY,
                run TEXT NOT NULL,
                step INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                model_spec TEXT NOT NULL,
                optimizer TEXT NOT NULL,
                batch_size INTEGER NOT NULL,
                seed INTEGER NOT NULL,
                data_epoch INTEGER NOT NULL,
                data_offset INTEGER NOT NULL,
                rng_state BLOB NOT NULL,
                note TEXT NOT NULL DEFAULT ''
            );
            CREATE INDEX checkpoints_by_run ON checkpoints (run, step);
            CREATE TABLE checkpoint_tensors (
                checkpoint_id INTEGER NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
                kind INTEGER NOT NULL,
                position INTEGER NOT NULL,
                name TEXT NOT NULL,
                dtype INTEGER NOT NULL,
                shape TEXT NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (checkpoint_id, kind, position)
            );
        )sql");
    },
    // 2: the device capability profile cache.
    [](Database &db) {
        db.exec(R"sql(
            CREATE TABLE device_profiles (
                id INTEGER PRIMARY KEY,
                hardware_key TEXT NOT NULL,
                measured_at INTEGER NOT NULL,
                profile TEXT NOT NULL
            );
            CREATE INDEX device_profiles_by_key ON device_profiles (hardware_key, measured_at);
        )sql");
    },
    // 3: the coordinator (engine/coord/coordinator_store.cpp): volunteers, runs, their
    // plan and assignments, metrics, and recently seen registration nonces. IF NOT EXISTS:
    // a database rolled back to an older version by hand may still have them.
    [](Database &db) {
        db.exec(R"sql(
            CREATE TABLE IF NOT EXISTS coord_volunteers (
                node_id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                listen_address TEXT NOT NULL,
                profile TEXT NOT NULL,
                upload_bytes_per_second REAL NOT NULL,
                certificate TEXT NOT NULL,
                software TEXT NOT NULL,
                first_seen_at INTEGER NOT NULL,
                last_seen_at INTEGER NOT NULL,
                presence TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS coord_runs (
                id TEXT PRIMARY KEY,
                created_at INTEGER NOT NULL,
                config TEXT NOT NULL,
                plan TEXT NOT NULL DEFAULT '',
                updated_at INTEGER NOT NULL
            );
            CREATE TABLE IF NOT EXISTS coord_assignments (
                run_id TEXT NOT NULL REFERENCES coord_runs (id) ON DELETE CASCADE,
                node_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                assignment TEXT NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (run_id, node_id)
            );
            CREATE TABLE IF NOT EXISTS coord_metrics (
                node_id TEXT NOT NULL,
                at INTEGER NOT NULL,
                step INTEGER NOT NULL,
                samples_per_second REAL NOT NULL,
                loss REAL NOT NULL,
                samples_total INTEGER NOT NULL,
                busy_fraction REAL NOT NULL,
                activity TEXT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS coord_metrics_by_node ON coord_metrics (node_id, at);
            CREATE TABLE IF NOT EXISTS coord_nonces (
                nonce BLOB PRIMARY KEY,
                node_id TEXT NOT NULL,
                seen_at INTEGER NOT NULL
            );
            CREATE INDEX IF NOT EXISTS coord_nonces_by_time ON coord_nonces (seen_at);
        )sql");
    },
    // 4: the volunteer's contribution per local day (contribution_store.cpp); IF NOT EXISTS
    // as in step 3.
    [](Database &db) {
        db.exec(R"sql(
            CREATE TABLE IF NOT EXISTS contributions (
                day TEXT PRIMARY KEY,
                samples INTEGER NOT NULL DEFAULT 0,
                compute_seconds REAL NOT NULL DEFAULT 0
            );
        )sql");
    },
    // 5: an invite-only coordinator's join tokens (coord/invite_book.cpp), by the SHA-256
    // of the token: uses left, and when each expires.
    [](Database &db) {
        db.exec(R"sql(
            CREATE TABLE IF NOT EXISTS coord_invites (
                token_hash TEXT PRIMARY KEY,
                created_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL,
                max_uses INTEGER NOT NULL,
                uses_left INTEGER NOT NULL,
                note TEXT NOT NULL DEFAULT ''
            );
        )sql");
    },
};

// Read-only checks on an existing file; nothing here writes.
void checkExisting(const fs::path &path)
{
    std::error_code ec;
    if (fs::file_size(path, ec) == 0 && !ec)
        return; // an empty file is an empty database
    // Only SQLite opens the file, never a stream of our own: closing any descriptor of a
    // file drops every POSIX lock this process holds on it, so a second connection
    // opened beside a running one would leave that one unlocked, and another process
    // (`rookery-coordinator invite`) could then checkpoint and remove the write-ahead
    // log under it: a corrupt database (SQLite's "How To Corrupt", 2.2).
    try {
        Database db(path, Database::Access::ReadOnly);
        const auto check = db.scalarText("PRAGMA integrity_check");
        if (check.value_or("") != "ok")
            throw Error("database " + path.string() + " is damaged (integrity check: " + check.value_or("no answer") +
                        ")." + kUntouched);
        const int64_t appId = db.scalarInt("PRAGMA application_id").value_or(0);
        const int64_t tables = db.scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table'").value_or(0);
        if (tables == 0 && appId == 0)
            return; // a fresh empty database
        if (appId != kApplicationId)
            throw Error("database " + path.string() + " is an SQLite database but not Rookery's." + kUntouched);
        const int version = schemaVersion(db);
        if (version > kSchemaVersion)
            throw Error("database " + path.string() + " was written by a newer Rookery (schema version " +
                        std::to_string(version) + "; this build knows up to " + std::to_string(kSchemaVersion) +
                        "). Upgrade Rookery to use it." + kUntouched);
        if (version < 1)
            throw Error("database " + path.string() + " has an invalid schema version " + std::to_string(version) +
                        "." + kUntouched);
    } catch (const Error &e) {
        const std::string msg = e.what();
        if (msg.find(kUntouched) != std::string::npos)
            throw;
        if (msg.find("file is not a database") != std::string::npos)
            throw Error("database " + path.string() + " is not a Rookery database (not an SQLite file)." + kUntouched);
        // SQLite refused to read it at all (malformed header, truncated file, ...).
        throw Error("database " + path.string() + " is damaged (" + msg + ")." + kUntouched);
    }
}

void migrate(Database &db)
{
    for (;;) {
        // The version is read inside the (immediate) transaction: two processes opening a
        // new database at once, a node and its status feed, migrate it once between them.
        Transaction tx(db);
        int version =
            db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'meta'").value_or(0) ? schemaVersion(db) : 0;
        if (version >= kSchemaVersion)
            return; // the transaction rolls back: nothing was written
        kMigrations[size_t(version)](db);
        ++version;
        db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)")
            .bind(1, std::string_view(std::to_string(version)))
            .run();
        db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
        tx.commit();
        log::info("store", "database " + db.path().string() + " migrated to schema version " + std::to_string(version));
    }
}

} // namespace

int schemaVersion(Database &db)
{
    const auto text = db.scalarText("SELECT value FROM meta WHERE key = 'schema_version'");
    if (!text)
        throw Error("database " + db.path().string() + " has no schema version");
    try {
        return std::stoi(*text);
    } catch (const std::exception &) {
        throw Error("database " + db.path().string() + " has a malformed schema version '" + *text + "'");
    }
}

Database openRookeryDatabase(const fs::path &path)
{
    std::error_code ec;
    if (fs::exists(path, ec))
        checkExisting(path);
    else if (path.has_parent_path() && !fs::is_directory(path.parent_path(), ec))
        throw Error("cannot create database " + path.string() + ": its directory does not exist");
    Database db(path, Database::Access::ReadWriteCreate);
    db.exec("PRAGMA journal_mode = WAL");
    // FULL: a checkpoint that reported success survives a power cut, not just a crash.
    db.exec("PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = ON");
    migrate(db);
    return db;
}

} // namespace rookery::store
