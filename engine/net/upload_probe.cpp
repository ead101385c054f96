// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/upload_probe.h"

#include <algorithm>
#include <cstdio>

#include "engine/common/format.h"

namespace rookery::net {

UploadProbe::UploadProbe(Send send, uint64_t nonceBase, UploadProbeSettings settings)
    : m_send(std::move(send))
    , m_settings(settings)
    , m_base(nonceBase)
    , m_next(nonceBase)
{
    m_settings.paddingBytes = std::clamp<size_t>(m_settings.paddingBytes, 1, kMaxPingPaddingBytes);
    m_settings.firstBurst = std::max(1, m_settings.firstBurst);
}

void UploadProbe::start(Clock::time_point now)
{
    if (m_phase != Phase::Idle)
        return;
    m_phase = Phase::RoundTrip;
    m_sent = now;
    m_lastOfBurst = m_next;
    if (!m_send(Ping{m_next++, {}})) {
        m_failure = "the link would not take a ping";
        m_phase = Phase::Done;
    }
}

void UploadProbe::sendBurst(int count, Clock::time_point now)
{
    const std::string padding(m_settings.paddingBytes, '\0');
    m_phase = Phase::Burst;
    m_burst = count;
    m_answered = 0;
    ++m_bursts;
    m_sent = now;
    for (int i = 0; i < count; ++i) {
        m_lastOfBurst = m_next;
        if (!m_send(Ping{m_next++, padding})) {
            m_failure = "the link would not take the burst (it closed, or its send queue is full)";
            m_phase = Phase::Done;
            return;
        }
    }
}

bool UploadProbe::pong(uint64_t nonce, Clock::time_point now)
{
    if (nonce < m_base || nonce >= m_next)
        return false;
    if (m_phase == Phase::Done || m_phase == Phase::Idle)
        return true;
    if (m_phase == Phase::Burst) {
        ++m_answered;
        m_lastAnswer = now;
    }
    if (nonce != m_lastOfBurst)
        return true;
    const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(now - m_sent);
    if (m_phase == Phase::RoundTrip) {
        m_rtt = elapsed;
        sendBurst(m_settings.firstBurst, now);
        return true;
    }
    timeBurst(m_burst, now);
    if (m_bursts == 1 && m_settings.secondBurst > 0 &&
        m_burstSeconds < std::chrono::duration<double>(m_settings.quickBurst).count())
        sendBurst(m_settings.secondBurst, now);
    else
        m_phase = Phase::Done;
    return true;
}

// The pings' bytes went up in the time to their last Pong less one round trip (the last
// one's trip out and its Pong's back), never less than half the time.
void UploadProbe::timeBurst(int answered, Clock::time_point at)
{
    const double seconds = std::chrono::duration<double>(at - m_sent).count();
    const double transfer = std::max(seconds - std::chrono::duration<double>(m_rtt).count(), seconds / 2);
    m_burstSeconds = transfer;
    m_timedPings = answered;
    m_rate = transfer > 0 ? double(answered) * double(m_settings.paddingBytes) / transfer : 0;
}

void UploadProbe::finishEarly()
{
    if (m_phase == Phase::Done)
        return;
    // In the second burst the first one's figure stands.
    if (m_phase == Phase::Burst && m_bursts == 1 && m_answered > 0)
        timeBurst(m_answered, m_lastAnswer);
    if (m_rate <= 0 && m_failure.empty())
        m_failure = "no answer to the probe within its time";
    m_phase = Phase::Done;
}

std::string UploadProbe::describe() const
{
    if (m_rate <= 0)
        return m_failure.empty() ? std::string("not measured") : "not measured: " + m_failure;
    char timing[64];
    std::snprintf(timing, sizeof timing, " in %.3f s, round trip %.1f ms)", m_burstSeconds,
                  double(m_rtt.count()) / 1000.0);
    return format::bytes(m_rate) + "/s (" + format::bytes(double(m_timedPings) * double(m_settings.paddingBytes)) +
           timing;
}

} // namespace rookery::net
