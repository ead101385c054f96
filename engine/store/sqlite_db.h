// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace rookery::store {

class Statement;

/// A thin RAII wrapper over one SQLite connection. Errors throw rookery::Error with
/// the database path and SQLite's message.
///
/// Thread safety: one connection per thread (SQLite's "multi-thread" mode); the writer
/// thread owns the writing connection.
class Database
{
public:
    enum class Access { ReadOnly, ReadWrite, ReadWriteCreate };

    Database(const std::filesystem::path &path, Access access);
    ~Database();
    Database(Database &&other) noexcept;
    Database &operator=(Database &&other) noexcept;
    Database(const Database &) = delete;
    Database &operator=(const Database &) = delete;

    void exec(std::string_view sql);
    Statement prepare(std::string_view sql);
    int64_t lastInsertRowId() const;
    /// Rows changed by the last INSERT, UPDATE or DELETE.
    int64_t changes() const;
    /// The first column of the first row of `sql`, as text; nullopt when no row.
    std::optional<std::string> scalarText(std::string_view sql);
    std::optional<int64_t> scalarInt(std::string_view sql);

    const std::filesystem::path &path() const { return m_path; }
    sqlite3 *handle() const { return m_db; }

    [[noreturn]] void fail(std::string_view context) const;

private:
    sqlite3 *m_db = nullptr;
    std::filesystem::path m_path;
};

/// A prepared statement. Bind indices start at 1, column indices at 0.
class Statement
{
public:
    Statement(Database &db, std::string_view sql);
    ~Statement();
    Statement(Statement &&other) noexcept;
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;
    Statement &operator=(Statement &&) = delete;

    Statement &bind(int index, int64_t value);
    Statement &bind(int index, double value);
    Statement &bind(int index, std::string_view text);
    Statement &bindBlob(int index, std::span<const uint8_t> blob);
    Statement &bindNull(int index);

    /// True while rows come; false when done.
    bool step();
    /// Runs a statement that returns no rows.
    void run();
    void reset();

    int64_t columnInt(int col) const;
    double columnDouble(int col) const;
    std::string columnText(int col) const;
    std::span<const uint8_t> columnBlob(int col) const;
    bool columnIsNull(int col) const;

private:
    Database *m_db;
    sqlite3_stmt *m_stmt = nullptr;
};

/// BEGIN IMMEDIATE ... COMMIT; rolls back if destroyed before commit().
class Transaction
{
public:
    explicit Transaction(Database &db);
    ~Transaction();
    Transaction(const Transaction &) = delete;
    Transaction &operator=(const Transaction &) = delete;
    void commit();

private:
    Database &m_db;
    bool m_done = false;
};

} // namespace rookery::store
