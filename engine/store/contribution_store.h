// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

namespace rookery::store {

class Database;

/// What this machine has given: samples trained and CPU time spent on training.
struct ContributionTotals
{
    int64_t samplesToday = 0;
    int64_t samplesTotal = 0;
    double computeSecondsToday = 0;
    double computeSecondsTotal = 0;
    bool operator==(const ContributionTotals &) const = default;
};

/// The volunteer's contribution, one row per local calendar day (table contributions),
/// so that "today" and "in total" both survive restarts.
///
/// Thread safety: all methods may be called from any thread; they serialise on one
/// connection. The in-process engine calls them from its own thread only, every few
/// seconds, never per batch.
class ContributionStore
{
public:
    /// Opens (or creates) the database; see openRookeryDatabase() for the checks.
    explicit ContributionStore(const std::filesystem::path &databasePath);
    ~ContributionStore();

    /// Adds to the row of `day` ("2026-05-01", the local date) in one transaction.
    void add(const std::string &day, int64_t samples, double computeSeconds);
    /// The totals, with `day` as today.
    ContributionTotals totals(const std::string &day);

    /// The local date of `unixMs` as "YYYY-MM-DD".
    static std::string localDay(int64_t unixMs);

private:
    std::mutex m_mutex;
    std::unique_ptr<Database> m_db;
};

} // namespace rookery::store
