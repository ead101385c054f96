// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/contribution_meter.h"

#include "engine/common/log.h"
#include "engine/common/wall_clock.h"
#include "engine/device/process_usage.h"

namespace rookery::host {
namespace {

std::string today() { return store::ContributionStore::localDay(nowMs()); }

} // namespace

ContributionMeter::ContributionMeter(std::unique_ptr<store::ContributionStore> store,
                                     std::chrono::seconds flushInterval)
    : m_store(std::move(store))
    , m_flushInterval(flushInterval)
    , m_savedDay(today())
    , m_lastFlush(std::chrono::steady_clock::now())
{
    if (m_store)
        m_saved = m_store->totals(m_savedDay);
}

ContributionMeter::~ContributionMeter()
{
    try {
        flush();
    } catch (const std::exception &e) {
        log::warning("store", std::string("the last contribution figures were not saved: ") + e.what());
    }
}

void ContributionMeter::jobStarted() { m_jobSamples = 0; }

void ContributionMeter::update(int64_t jobSamples, bool computing)
{
    if (jobSamples > m_jobSamples)
        m_pendingSamples += jobSamples - m_jobSamples;
    m_jobSamples = jobSamples;
    const auto cpu = device::processCpuTime();
    if (computing && m_wasComputing) // count whole intervals spent training
        m_pendingSeconds += std::chrono::duration<double>(cpu - m_lastCpu).count();
    m_lastCpu = cpu;
    m_wasComputing = computing;
    const auto now = std::chrono::steady_clock::now();
    if (now - m_lastFlush >= m_flushInterval || today() != m_savedDay)
        flush();
}

void ContributionMeter::flush()
{
    m_lastFlush = std::chrono::steady_clock::now();
    if (!m_store)
        return;
    const std::string day = today();
    if (m_pendingSamples > 0 || m_pendingSeconds > 0) {
        m_store->add(day, m_pendingSamples, m_pendingSeconds);
        m_pendingSamples = 0;
        m_pendingSeconds = 0;
    }
    m_saved = m_store->totals(day);
    m_savedDay = day;
}

ContributionView ContributionMeter::view() const
{
    ContributionView v;
    v.samplesToday = m_saved.samplesToday + m_pendingSamples;
    v.samplesTotal = m_saved.samplesTotal + m_pendingSamples;
    v.computeHoursToday = (m_saved.computeSecondsToday + m_pendingSeconds) / 3600.0;
    v.computeHoursTotal = (m_saved.computeSecondsTotal + m_pendingSeconds) / 3600.0;
    return v;
}

} // namespace rookery::host
