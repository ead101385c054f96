// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/store/sqlite_db.h"

#include <utility>

#include <sqlite3.h>

#include "engine/common/error.h"
#include "engine/common/log.h"

namespace rookery::store {

Database::Database(const std::filesystem::path &path, Access access)
    : m_path(path)
{
    int flags = SQLITE_OPEN_NOMUTEX;
    switch (access) {
    case Access::ReadOnly:
        flags |= SQLITE_OPEN_READONLY;
        break;
    case Access::ReadWrite:
        flags |= SQLITE_OPEN_READWRITE;
        break;
    case Access::ReadWriteCreate:
        flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
        break;
    }
    const int rc = sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close(m_db);
        m_db = nullptr;
        throw Error("cannot open database " + path.string() + ": " + msg);
    }
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_timeout(m_db, 5000);
}

Database::~Database()
{
    if (m_db)
        sqlite3_close(m_db);
}

Database::Database(Database &&other) noexcept
    : m_db(std::exchange(other.m_db, nullptr))
    , m_path(std::move(other.m_path))
{ }

Database &Database::operator=(Database &&other) noexcept
{
    if (this != &other) {
        if (m_db)
            sqlite3_close(m_db);
        m_db = std::exchange(other.m_db, nullptr);
        m_path = std::move(other.m_path);
    }
    return *this;
}

void Database::fail(std::string_view context) const
{
    throw Error("database " + m_path.string() + ": " + std::string(context) + ": " +
                (m_db ? sqlite3_errmsg(m_db) : "not open"));
}

void Database::exec(std::string_view sql)
{
    char *err = nullptr;
    const std::string text(sql);
    if (sqlite3_exec(m_db, text.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : "unknown error";
        sqlite3_free(err);
        throw Error("database " + m_path.string() + ": " + msg + " (in: " + text.substr(0, 80) + ")");
    }
}

Statement Database::prepare(std::string_view sql) { return Statement(*this, sql); }

int64_t Database::lastInsertRowId() const { return sqlite3_last_insert_rowid(m_db); }

int64_t Database::changes() const { return sqlite3_changes64(m_db); }

std::optional<std::string> Database::scalarText(std::string_view sql)
{
    Statement s(*this, sql);
    if (!s.step() || s.columnIsNull(0))
        return std::nullopt;
    return s.columnText(0);
}

std::optional<int64_t> Database::scalarInt(std::string_view sql)
{
    Statement s(*this, sql);
    if (!s.step() || s.columnIsNull(0))
        return std::nullopt;
    return s.columnInt(0);
}

Statement::Statement(Database &db, std::string_view sql)
    : m_db(&db)
{
    if (sqlite3_prepare_v2(db.handle(), sql.data(), int(sql.size()), &m_stmt, nullptr) != SQLITE_OK)
        db.fail("cannot prepare '" + std::string(sql.substr(0, 60)) + "'");
}

Statement::~Statement() { sqlite3_finalize(m_stmt); }

Statement::Statement(Statement &&other) noexcept
    : m_db(other.m_db)
    , m_stmt(std::exchange(other.m_stmt, nullptr))
{ }

Statement &Statement::bind(int index, int64_t value)
{
    if (sqlite3_bind_int64(m_stmt, index, value) != SQLITE_OK)
        m_db->fail("bind");
    return *this;
}

Statement &Statement::bind(int index, double value)
{
    if (sqlite3_bind_double(m_stmt, index, value) != SQLITE_OK)
        m_db->fail("bind");
    return *this;
}

Statement &Statement::bind(int index, std::string_view text)
{
    if (sqlite3_bind_text64(m_stmt, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8) != SQLITE_OK)
        m_db->fail("bind");
    return *this;
}

Statement &Statement::bindBlob(int index, std::span<const uint8_t> blob)
{
    // SQLITE_STATIC: callers keep the bytes alive until step() returns, which saves a
    // copy of every checkpoint tensor.
    if (sqlite3_bind_blob64(m_stmt, index, blob.empty() ? "" : static_cast<const void *>(blob.data()), blob.size(),
                            SQLITE_STATIC) != SQLITE_OK)
        m_db->fail("bind");
    return *this;
}

Statement &Statement::bindNull(int index)
{
    if (sqlite3_bind_null(m_stmt, index) != SQLITE_OK)
        m_db->fail("bind");
    return *this;
}

bool Statement::step()
{
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    m_db->fail("query failed");
}

void Statement::run()
{
    while (step()) { }
}

void Statement::reset()
{
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

int64_t Statement::columnInt(int col) const { return sqlite3_column_int64(m_stmt, col); }

double Statement::columnDouble(int col) const { return sqlite3_column_double(m_stmt, col); }

std::string Statement::columnText(int col) const
{
    const auto *text = reinterpret_cast<const char *>(sqlite3_column_text(m_stmt, col));
    return text ? std::string(text, size_t(sqlite3_column_bytes(m_stmt, col))) : std::string();
}

std::span<const uint8_t> Statement::columnBlob(int col) const
{
    const auto *data = static_cast<const uint8_t *>(sqlite3_column_blob(m_stmt, col));
    return {data, size_t(sqlite3_column_bytes(m_stmt, col))};
}

bool Statement::columnIsNull(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }

Transaction::Transaction(Database &db)
    : m_db(db)
{
    m_db.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction()
{
    if (!m_done) {
        try {
            m_db.exec("ROLLBACK");
        } catch (const std::exception &e) {
            log::warning("store", std::string("rollback failed: ") + e.what());
        }
    }
}

void Transaction::commit()
{
    m_db.exec("COMMIT");
    m_done = true;
}

} // namespace rookery::store
