// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rookery::store {
class Database;
}

namespace rookery::coord {

/// A join token as `rookery-coordinator invite` made it. The token itself is shown once,
/// when it is made; the database keeps only its SHA-256.
struct Invite
{
    std::string token;     ///< empty when read back from the database
    std::string tokenHash; ///< lowercase hex SHA-256 of the token
    int64_t createdMs = 0;
    int64_t expiresMs = 0;
    int64_t maxUses = 0;
    int64_t usesLeft = 0;
    std::string note;
};

/// An invite-only coordinator's join tokens, in the coord_invites table of its
/// database. Each token admits up to `maxUses` new keys (a node that registered once is
/// known and needs no token again) until it expires. Redeeming is one UPDATE, so uses
/// and expiry hold across restarts and against `rookery-coordinator invite` writing from
/// another process at the same time.
///
/// Thread safety: all methods may be called from any thread (one connection, a mutex).
class InviteBook
{
public:
    /// Opens the database (openRookeryDatabase: checks and migrations). Throws
    /// rookery::Error naming the problem.
    explicit InviteBook(const std::filesystem::path &databasePath);
    ~InviteBook();
    InviteBook(const InviteBook &) = delete;
    InviteBook &operator=(const InviteBook &) = delete;

    /// A new token for `uses` new volunteers, valid for `validity` from `nowMs`.
    /// Throws rookery::Error when uses or validity are not positive.
    Invite create(int64_t uses, std::chrono::seconds validity, std::string note, int64_t nowMs);
    /// Takes one use of `token`. nullopt: admitted; otherwise why not, in words for the
    /// volunteer ("this invite expired on 2026-12-01 10:00 UTC: ask ... for a new one").
    std::optional<std::string> redeem(std::string_view token, int64_t nowMs);
    /// Every invite, newest first (for `rookery-coordinator invite --list`).
    std::vector<Invite> list();
    /// Invites that can still admit someone at `nowMs`.
    size_t usableCount(int64_t nowMs);

private:
    std::mutex m_mutex;
    std::unique_ptr<store::Database> m_db;
};

/// "2026-12-01 10:00 UTC" for a Unix time in milliseconds.
std::string utcMinuteText(int64_t unixMs);

} // namespace rookery::coord
