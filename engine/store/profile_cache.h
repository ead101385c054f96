// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace rookery::store {

class Database;

/// A capability profile as stored: JSON text and when it was measured. The store does
/// not know the profile's fields; engine/device reads and writes the JSON.
struct StoredProfile
{
    std::string hardwareKey;
    int64_t measuredAtMs = 0; ///< Unix time in milliseconds
    std::string json;
};

/// The device capability profiles measured on this machine (table device_profiles),
/// one or a few per hardware key.
///
/// Thread safety: all methods may be called from any thread; they serialise on one
/// connection.
class ProfileCache
{
public:
    /// Opens (or creates) the database; see openRookeryDatabase() for the checks.
    explicit ProfileCache(const std::filesystem::path &databasePath);
    ~ProfileCache();

    /// The newest profile stored under `hardwareKey`, if any.
    std::optional<StoredProfile> newest(const std::string &hardwareKey);
    /// Stores a profile and keeps only the newest `keepPerKey` under its key, in one
    /// transaction.
    void save(const StoredProfile &profile, int keepPerKey = 3);
    /// How many profiles are stored under `hardwareKey` (all keys when empty).
    int64_t count(const std::string &hardwareKey = {});

private:
    std::mutex m_mutex;
    std::unique_ptr<Database> m_db;
};

} // namespace rookery::store
