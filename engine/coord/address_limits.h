// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

namespace rookery::coord {

/// How much one source address may ask of the coordinator. 0 turns a limit off (a
/// benchmark that runs thousands of nodes from one machine).
struct AddressLimitSettings
{
    /// Nodes registered at once from one address. Volunteers behind one home router
    /// share its address; a university or an office may need more.
    size_t maxNodesPerAddress = 32;
    /// Registrations accepted from one address per minute, after a burst of
    /// `registrationBurst` (a household starting together, or reconnecting after the
    /// coordinator restarted).
    double registrationsPerMinute = 30;
    double registrationBurst = 40;
};

/// Counts per source address: a token bucket of registrations and the nodes linked now.
/// An address whose bucket is full and that has no node is forgotten by prune(), so the
/// table holds only addresses that are active.
///
/// Thread safety: none; NodeRegistry calls it under its lock.
class AddressLimits
{
public:
    using Clock = std::chrono::steady_clock;

    explicit AddressLimits(AddressLimitSettings settings);

    /// A registration from `host` at `now`: takes a token. nullopt: go ahead; otherwise
    /// why not, in words, with when to try again.
    std::optional<std::string> admitRegistration(const std::string &host, Clock::time_point now);
    /// Whether `host` may link one more node: nullopt, or why not.
    std::optional<std::string> roomForNode(const std::string &host) const;
    void nodeLinked(const std::string &host);
    void nodeUnlinked(const std::string &host);
    /// Forgets addresses with a full bucket and no node.
    void prune(Clock::time_point now);
    size_t trackedAddresses() const { return m_addresses.size(); }

private:
    struct Entry
    {
        double tokens = 0;
        Clock::time_point refilled;
        size_t nodes = 0;
    };
    void refill(Entry &entry, Clock::time_point now) const;

    AddressLimitSettings m_settings;
    std::unordered_map<std::string, Entry> m_addresses;
};

/// The host of a link's remote "host:port" ("[v6]:port" too; net::splitHostPort); the
/// text itself when it is not host:port.
std::string hostOfRemote(const std::string &remote);

} // namespace rookery::coord
