// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/invite_book.h"

#include <ctime>

#include "engine/common/error.h"
#include "engine/common/secret_token.h"
#include "engine/net/coordinator_address.h"
#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"

namespace rookery::coord {

std::string utcMinuteText(int64_t unixMs)
{
    const std::time_t t = std::time_t(unixMs / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[40];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
    return text;
}

InviteBook::InviteBook(const std::filesystem::path &databasePath)
    : m_db(std::make_unique<store::Database>(store::openRookeryDatabase(databasePath)))
{ }

InviteBook::~InviteBook() = default;

Invite InviteBook::create(int64_t uses, std::chrono::seconds validity, std::string note, int64_t nowMs)
{
    if (uses < 1)
        throw Error("an invite admits at least 1 volunteer, not " + std::to_string(uses));
    if (validity.count() < 1)
        throw Error("an invite must be valid for at least a second");
    Invite invite;
    invite.token = newToken().substr(0, 32); // 128 bits
    invite.tokenHash = sha256Hex(invite.token);
    invite.createdMs = nowMs;
    invite.expiresMs = nowMs + validity.count() * 1000;
    invite.maxUses = invite.usesLeft = uses;
    invite.note = std::move(note);
    std::lock_guard lock(m_mutex);
    m_db->prepare("INSERT INTO coord_invites (token_hash, created_at, expires_at, max_uses, uses_left, note) "
                  "VALUES (?, ?, ?, ?, ?, ?)")
        .bind(1, std::string_view(invite.tokenHash))
        .bind(2, invite.createdMs)
        .bind(3, invite.expiresMs)
        .bind(4, invite.maxUses)
        .bind(5, invite.usesLeft)
        .bind(6, std::string_view(invite.note))
        .run();
    return invite;
}

std::optional<std::string> InviteBook::redeem(std::string_view token, int64_t nowMs)
{
    constexpr std::string_view ask = ": ask the swarm's organisers for a new join string";
    if (token.empty())
        return "this swarm is invite-only, and the join string has no invite (...&invite=<token> after the "
               "fingerprint)" +
               std::string(ask);
    if (!net::validInvite(token))
        return "the invite in the join string is malformed" + std::string(ask);
    const std::string hash = sha256Hex(token);
    std::lock_guard lock(m_mutex);
    m_db->prepare("UPDATE coord_invites SET uses_left = uses_left - 1 "
                  "WHERE token_hash = ? AND uses_left > 0 AND expires_at > ?")
        .bind(1, std::string_view(hash))
        .bind(2, nowMs)
        .run();
    if (m_db->changes() == 1)
        return std::nullopt;
    auto q = m_db->prepare("SELECT expires_at, max_uses FROM coord_invites WHERE token_hash = ?");
    q.bind(1, std::string_view(hash));
    if (!q.step())
        return "this coordinator never issued the invite in the join string" + std::string(ask);
    const int64_t expires = q.columnInt(0);
    if (expires <= nowMs)
        return "the invite expired on " + utcMinuteText(expires) + std::string(ask);
    return "the invite has been used up (it admitted " + std::to_string(q.columnInt(1)) + " volunteer" +
           (q.columnInt(1) == 1 ? "" : "s") + ")" + std::string(ask);
}

std::vector<Invite> InviteBook::list()
{
    std::lock_guard lock(m_mutex);
    auto q = m_db->prepare("SELECT token_hash, created_at, expires_at, max_uses, uses_left, note FROM coord_invites "
                           "ORDER BY created_at DESC");
    std::vector<Invite> out;
    while (q.step())
        out.push_back(
            {"", q.columnText(0), q.columnInt(1), q.columnInt(2), q.columnInt(3), q.columnInt(4), q.columnText(5)});
    return out;
}

size_t InviteBook::usableCount(int64_t nowMs)
{
    std::lock_guard lock(m_mutex);
    auto q = m_db->prepare("SELECT count(*) FROM coord_invites WHERE uses_left > 0 AND expires_at > ?");
    q.bind(1, nowMs);
    return q.step() ? size_t(q.columnInt(0)) : 0;
}

} // namespace rookery::coord
