// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/store/profile_cache.h"

#include "engine/common/error.h"
#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"

namespace rookery::store {

ProfileCache::ProfileCache(const std::filesystem::path &databasePath)
    : m_db(std::make_unique<Database>(openRookeryDatabase(databasePath)))
{ }

ProfileCache::~ProfileCache() = default;

std::optional<StoredProfile> ProfileCache::newest(const std::string &hardwareKey)
{
    std::lock_guard lock(m_mutex);
    Statement s = m_db->prepare("SELECT measured_at, profile FROM device_profiles WHERE hardware_key = ? "
                                "ORDER BY measured_at DESC, id DESC LIMIT 1");
    s.bind(1, std::string_view(hardwareKey));
    if (!s.step())
        return std::nullopt;
    return StoredProfile{hardwareKey, s.columnInt(0), s.columnText(1)};
}

void ProfileCache::save(const StoredProfile &profile, int keepPerKey)
{
    if (keepPerKey < 1)
        throw Error("must keep at least one profile");
    std::lock_guard lock(m_mutex);
    Transaction tx(*m_db);
    m_db->prepare("INSERT INTO device_profiles (hardware_key, measured_at, profile) VALUES (?, ?, ?)")
        .bind(1, std::string_view(profile.hardwareKey))
        .bind(2, profile.measuredAtMs)
        .bind(3, std::string_view(profile.json))
        .run();
    m_db->prepare("DELETE FROM device_profiles WHERE hardware_key = ?1 AND id NOT IN (SELECT id FROM "
                  "device_profiles WHERE hardware_key = ?1 ORDER BY measured_at DESC, id DESC LIMIT ?2)")
        .bind(1, std::string_view(profile.hardwareKey))
        .bind(2, int64_t(keepPerKey))
        .run();
    tx.commit();
}

int64_t ProfileCache::count(const std::string &hardwareKey)
{
    std::lock_guard lock(m_mutex);
    Statement s = m_db->prepare(hardwareKey.empty() ? "SELECT count(*) FROM device_profiles WHERE ?1 = ?1"
                                                    : "SELECT count(*) FROM device_profiles WHERE hardware_key = ?1");
    s.bind(1, std::string_view(hardwareKey));
    s.step();
    return s.columnInt(0);
}

} // namespace rookery::store
