// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "engine/net/wire_message.h"

namespace rookery::net {

struct UploadProbeSettings
{
    size_t paddingBytes = kMaxPingPaddingBytes; ///< per ping
    int firstBurst = 4;                         ///< padded pings in the first burst (240 KiB)
    int secondBurst = 32;                       ///< in the second (1.9 MiB), sent when the first was quick
    /// A first burst that took less than this beyond the round trip is too short to time
    /// well: the second, larger burst follows. A slower one is the measure (a home
    /// upload of 1 Mbit/s spends 2 s on it, and is not made to spend 16 on the second).
    std::chrono::milliseconds quickBurst{250};
};

/// Measures the upload of a link with pings, which every link answers by itself: one
/// bare ping for the round trip, then a burst of padded ones (and a larger burst if the
/// first was quick). The rate is the burst's bytes over the time to its last Pong less
/// one round trip. Works on any open link, the coordinator's included (a padded ping
/// stays within the 64 KiB a coordinator accepts from a node); TCP's slow start makes it
/// read low on links with a large bandwidth-delay product (2 MiB in flight at 100 ms
/// measures at most about 20 MB/s).
///
/// Thread safety: none; call it from one thread (the link's events' strand).
class UploadProbe
{
public:
    using Clock = std::chrono::steady_clock;
    /// Queues a ping on the link; false when it could not.
    using Send = std::function<bool(const Ping &)>;

    /// `nonceBase`: the probe's pings carry nonceBase, nonceBase + 1, ...; choose one the
    /// link's other pings never use.
    UploadProbe(Send send, uint64_t nonceBase, UploadProbeSettings settings = {});

    /// Sends the bare ping. Call once.
    void start(Clock::time_point now);
    /// A Pong arrived: true when it was one of this probe's (the caller then ignores it).
    bool pong(uint64_t nonce, Clock::time_point now);

    /// Out of time: ends the probe, timing the first burst by the Pongs it has had so far
    /// (a slow uplink still gets a figure, from part of the burst). No-op once done.
    void finishEarly();

    bool done() const { return m_phase == Phase::Done; }
    /// Bytes per second of the last burst timed; 0 before one completes, or when a send failed.
    double bytesPerSecond() const { return m_rate; }
    std::chrono::microseconds roundTrip() const { return m_rtt; }
    /// "4.2 MB/s (1.9 MiB in 0.46 s, round trip 21 ms)", or why there is no figure.
    std::string describe() const;

private:
    enum class Phase { Idle, RoundTrip, Burst, Done };
    void sendBurst(int count, Clock::time_point now);
    void timeBurst(int answered, Clock::time_point at); ///< the rate from `answered` pings' Pongs by `at`

    Send m_send;
    UploadProbeSettings m_settings;
    uint64_t m_base;
    uint64_t m_next; ///< the next nonce to send
    uint64_t m_lastOfBurst = 0;
    int m_burst = 0;    ///< pings in the burst in flight
    int m_answered = 0; ///< of them, answered so far
    Clock::time_point m_lastAnswer{};
    int m_bursts = 0;
    Phase m_phase = Phase::Idle;
    Clock::time_point m_sent{};
    std::chrono::microseconds m_rtt{0};
    double m_rate = 0;
    double m_burstSeconds = 0;
    int m_timedPings = 0; ///< the pings the rate counts
    std::string m_failure;
};

} // namespace rookery::net
