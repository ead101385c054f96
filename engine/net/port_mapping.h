// SPDX-License-Identifier: GPL-3.0-or-later
// Port mapping: asks the home router (UPnP IGD, else NAT-PMP) to forward a TCP port to
// this computer, keeps the mapping alive and removes it on shutdown, as Transmission does.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace rookery::net {

/// What to map and how patiently. Plain values; defaults in the initialisers.
struct PortMappingSettings
{
    bool enabled = true;
    uint16_t internalPort = 0;                        ///< the TCP port this computer listens on
    std::string description = "Rookery";              ///< shown in the router's mapping table
    std::chrono::seconds lease{3600};                 ///< asked-for lifetime; renewed at half of it
    std::chrono::milliseconds discoveryTimeout{2000}; ///< per protocol: UPnP, then NAT-PMP
    std::chrono::seconds retryAfterFailure{300};      ///< when neither protocol mapped the port
    std::string onlyGateway;                          ///< when set (an IPv4 address), only this router is asked
};

/// A snapshot of the mapping, for display and for telling peers where to connect.
struct PortMappingStatus
{
    enum class State { Off, Discovering, Mapped, Failed };
    State state = State::Off;
    std::string method;          ///< "UPnP IGD" or "NAT-PMP" (also set on a refusal)
    std::string externalAddress; ///< the router's public IPv4 address when Mapped
    uint16_t externalPort = 0;   ///< may differ from internalPort when the router's was taken
    std::string error;           ///< when Failed: a sentence saying what failed and what to do

    bool operator==(const PortMappingStatus &) const = default;
};

/// "Off", "Discovering", "Mapped", "Failed".
const char *toString(PortMappingStatus::State state);

/// Keeps one TCP port mapping on the home router for as long as it lives.
///
/// Runs on its own thread: tries UPnP IGD (discovery, then AddPortMapping for the same
/// external port, or a few neighbours when the router reports a conflict), then NAT-PMP.
/// Renews at half the granted lease, rediscovers when a renewal fails, retries after
/// `retryAfterFailure` when both protocols failed, and removes the mapping on destruction.
///
/// Usage:
/// @code
///   PortMappingSettings s;
///   s.internalPort = listener.port();
///   PortMapper mapper(s, [this](const PortMappingStatus &st) { postToEngine(st); });
///   ... mapper.status().externalPort is the port to advertise when state == Mapped ...
/// @endcode
///
/// Thread safety: status() may be called from any thread. `changed` is called on the
/// mapper's own thread, once per change of the snapshot, never after the destructor has
/// returned; it must not destroy the PortMapper. The constructor returns at once; the
/// destructor returns within about 3 s even when the router stopped answering (the
/// removal then finishes, or gives up, on its own).
class PortMapper
{
public:
    using Changed = std::function<void(const PortMappingStatus &)>;

    PortMapper(PortMappingSettings settings, Changed changed);
    ~PortMapper();
    PortMapper(const PortMapper &) = delete;
    PortMapper &operator=(const PortMapper &) = delete;

    PortMappingStatus status() const;

private:
    class Shared; // the worker's state, shared with its thread; in port_mapping.cpp
    std::shared_ptr<Shared> m_shared;
    std::thread m_thread;
};

} // namespace rookery::net
