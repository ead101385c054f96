// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/store/contribution_store.h"

#include <ctime>

#include "engine/common/error.h"
#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"

namespace rookery::store {

ContributionStore::ContributionStore(const std::filesystem::path &databasePath)
    : m_db(std::make_unique<Database>(openRookeryDatabase(databasePath)))
{ }

ContributionStore::~ContributionStore() = default;

void ContributionStore::add(const std::string &day, int64_t samples, double computeSeconds)
{
    if (samples < 0 || computeSeconds < 0)
        throw Error("a contribution cannot be negative");
    std::lock_guard lock(m_mutex);
    m_db->prepare("INSERT INTO contributions (day, samples, compute_seconds) VALUES (?1, ?2, ?3) "
                  "ON CONFLICT (day) DO UPDATE SET samples = samples + ?2, compute_seconds = compute_seconds + ?3")
        .bind(1, std::string_view(day))
        .bind(2, samples)
        .bind(3, computeSeconds)
        .run();
}

ContributionTotals ContributionStore::totals(const std::string &day)
{
    std::lock_guard lock(m_mutex);
    Statement s = m_db->prepare("SELECT coalesce(sum(samples), 0), coalesce(sum(compute_seconds), 0), "
                                "coalesce(sum(CASE WHEN day = ?1 THEN samples END), 0), "
                                "coalesce(sum(CASE WHEN day = ?1 THEN compute_seconds END), 0) FROM contributions");
    s.bind(1, std::string_view(day));
    ContributionTotals t;
    if (s.step()) {
        t.samplesTotal = s.columnInt(0);
        t.computeSecondsTotal = s.columnDouble(1);
        t.samplesToday = s.columnInt(2);
        t.computeSecondsToday = s.columnDouble(3);
    }
    return t;
}

std::string ContributionStore::localDay(int64_t unixMs)
{
    const std::time_t t = std::time_t(unixMs / 1000);
    std::tm local{};
    ::localtime_r(&t, &local);
    char text[16];
    std::strftime(text, sizeof text, "%Y-%m-%d", &local);
    return text;
}

} // namespace rookery::store
