// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/net/wire_message.h"
#include "engine/swarm/cluster_formation.h"

namespace rookery::coord {

/// A registration the coordinator will not accept, with the code and sentence the
/// node receives in a CoordinatorError.
struct Refusal
{
    net::CoordinatorErrorCode code = net::CoordinatorErrorCode::BadRequest;
    std::string reason;
};

/// What a registration tells the planner, checked.
struct CheckedRegistration
{
    std::string name;
    std::string listenAddress; ///< "host:port" with a wildcard host replaced by the link's
    swarm::Capacity capacity;
    bool assumedBandwidth = false; ///< the node measured none; the default was used
};

/// Bandwidth assumed for a node that did not measure its upload: 100 Mbit/s.
inline constexpr double kDefaultUploadBytesPerSecond = 12.5e6;
/// Registrations stamped further than this from the coordinator's clock are refused.
inline constexpr std::chrono::minutes kRegistrationClockWindow{5};

/// Checks everything in `r` but the nonce: the clock window, the name, the listen
/// address, and the capability profile (parsed as engine/device's JSON; measured
/// compute and memory required). `remoteAddress` is where the link comes from
/// ("10.0.0.5:40412", "[::1]:40412"). Throws Refusal naming what is wrong.
///
/// Thread safety: reentrant.
CheckedRegistration checkRegistration(const net::Register &r, const std::string &remoteAddress, int64_t nowMs);

/// The planner's view of a measured profile: the faster of the CPU (all threads, the
/// available RAM) and the best GPU (its GFLOP/s and memory).
swarm::Capacity capacityOf(const std::string &profileJson, double uploadBytesPerSecond);

/// Registration nonces seen recently: a nonce seen before is a replay. Nonces older
/// than twice the clock window can be forgotten, because a registration that old is
/// refused for its timestamp anyway.
///
/// Thread safety: all methods may be called from any thread.
class ReplayGuard
{
public:
    /// Records `nonce`; false when it was seen before.
    bool admit(const std::string &nonce, int64_t nowMs);
    /// Forgets nonces seen before `nowMs` minus twice the clock window.
    void prune(int64_t nowMs);
    size_t size() const;

private:
    mutable std::mutex m_mutex;
    std::unordered_map<std::string, int64_t> m_seen;
};

} // namespace rookery::coord
