// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rookery::sim {

/// A span of simulated time, in seconds from the start.
struct Interval
{
    double start = 0;
    double end = 0;
};

/// One volunteer as the simulator sees it: what its measured profile would say, its
/// links, and when it is there. Between sessions it sleeps or is switched off (silent
/// to the coordinator); after `departsAt` it never comes back.
struct Volunteer
{
    double gflops = 50;
    int64_t memoryBytes = int64_t(4) << 30;
    double upBytesPerSecond = 2.5e6;
    double downBytesPerSecond = 12.5e6;
    int region = 0;
    bool relayed = false;           ///< behind a NAT no peer can dial: its links go through a relay
    std::vector<Interval> sessions; ///< online, in order, not overlapping
    std::vector<Interval> pauses;   ///< online but not training (the user is active), inside sessions
    double departsAt = -1;          ///< permanent departure, -1 for none
};

/// Round-trip times between regions, and what a relay costs.
struct Network
{
    std::vector<std::string> regions{"region 0"};
    std::vector<std::vector<double>> rttSeconds{{0.02}}; ///< [from][to], symmetric
    double relayBytesPerSecond = 2.5e6;                  ///< a relayed link carries at most this
    double relayExtraRttSeconds = 0.05;                  ///< and takes this much longer
    /// What our transport costs each end of a link in CPU (framing, checksums, TLS,
    /// copies, the system calls), in FLOP-equivalents so that a slower volunteer pays
    /// more: per message and per byte, charged to the node's compute. 0: not modelled.
    /// Next to a residential link's wire time it is small (1.5 ns per byte for both
    /// ends on this machine, against 160 ns per byte at 50 Mbit/s); on loopback it is
    /// what sending costs. bench_sim_validation measures it (bench_transport).
    double transportFlopsPerMessage = 0;
    double transportFlopsPerByte = 0;
};

struct Population
{
    Network network;
    std::vector<Volunteer> volunteers;
};

/// The generator's knobs. Every default is documented, with its source or as our own
/// assumption, in docs/scale.md.
struct GeneratorOptions
{
    int volunteers = 1000;
    double hours = 24;
    uint64_t seed = 1;
    double gflopsMedian = 50; ///< log-normal
    double gflopsSigma = 0.6;
    double memoryMedianBytes = 4.0 * (int64_t(1) << 30); ///< what a volunteer lets us use
    double memorySigma = 0.5;
    double downMedianBytesPerSecond = 100e6 / 8; ///< 100 Mbit/s
    double upMedianBytesPerSecond = 20e6 / 8;    ///< 20 Mbit/s
    double bandwidthSigma = 0.8;
    double relayedShare = 0.3;
    /// >= 0: every volunteer in one region with this round trip (a LAN: about 0.001),
    /// the same volunteers otherwise; < 0: the four regions of defaultNetwork().
    double rttSeconds = -1;
    double sessionMeanHours = 6; ///< Weibull ON periods
    double sessionShape = 0.7;
    double offMeanHours = 4; ///< Weibull OFF periods (sleep, switched off)
    double offShape = 0.6;
    double pausesPerHour = 1;       ///< user activity pauses, Poisson
    double pauseMeanMinutes = 3;    ///< exponential
    double departuresPerDay = 0.05; ///< share of volunteers leaving for good per day
};

/// The default network: four regions (North America, Europe, Asia, South America) with
/// round-trip times of our own choosing (docs/scale.md).
Network defaultNetwork();

/// A seeded population: the same options give the same volunteers.
Population generatePopulation(const GeneratorOptions &options);

/// JSON: {"regions": [...], "rtt_ms": [[...]], "relay_mbit": x, "relay_extra_rtt_ms": y,
/// "volunteers": [{"gflops", "memory_gib", "up_mbit", "down_mbit", "region", "relayed",
/// "sessions_h": [[start, end], ...], "pauses_h": [...], "departs_h"}]}. Times in hours.
/// Throws rookery::Error naming what is wrong.
Population populationFromJson(const std::string &json);
std::string toJson(const Population &population);
Population loadPopulation(const std::string &path);

} // namespace rookery::sim
