// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/host.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/host/engine_snapshot.h"
#include "engine/store/contribution_store.h"

namespace rookery::host {

/// Counts what this machine gives, for the contribution card: samples trained by this
/// node and the process's CPU time while it trains. Keeps the figures in memory and
/// writes them to the database every few seconds (never per batch), when the day
/// changes, when a job ends and at destruction, so totals survive restarts.
///
/// Why CPU time of the whole process: it is what the volunteer gives (the trainer,
/// BLAS's helpers, checkpoint copies, networking); the UI thread's share is a few
/// percent, and time spent held by the governor is not counted at all.
///
/// Thread safety: one thread (the engine's).
class ContributionMeter
{
public:
    /// Without a database (it could not be opened) the figures live in memory only.
    explicit ContributionMeter(std::unique_ptr<store::ContributionStore> store,
                               std::chrono::seconds flushInterval = std::chrono::seconds(10));
    ~ContributionMeter();

    /// A new job: its sample count starts from 0.
    void jobStarted();
    /// Called every tick with the job's samples so far and whether it trains now.
    void update(int64_t jobSamples, bool computing);
    /// Writes what is pending. Throws rookery::Error when the database refuses.
    void flush();
    ContributionView view() const;

private:
    std::unique_ptr<store::ContributionStore> m_store;
    std::chrono::seconds m_flushInterval;
    store::ContributionTotals m_saved; // as stored, for m_savedDay
    std::string m_savedDay;
    int64_t m_pendingSamples = 0;
    double m_pendingSeconds = 0;
    int64_t m_jobSamples = 0;
    std::chrono::nanoseconds m_lastCpu{0};
    bool m_wasComputing = false;
    std::chrono::steady_clock::time_point m_lastFlush;
};

} // namespace rookery::host
