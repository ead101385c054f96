// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/address_limits.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "engine/common/error.h"
#include "engine/net/host_port.h"

namespace rookery::coord {

AddressLimits::AddressLimits(AddressLimitSettings settings)
    : m_settings(settings)
{ }

void AddressLimits::refill(Entry &e, Clock::time_point now) const
{
    const double minutes = std::chrono::duration<double, std::ratio<60>>(now - e.refilled).count();
    if (minutes > 0) {
        e.tokens = std::min(m_settings.registrationBurst, e.tokens + minutes * m_settings.registrationsPerMinute);
        e.refilled = now;
    }
}

std::optional<std::string> AddressLimits::admitRegistration(const std::string &host, Clock::time_point now)
{
    if (m_settings.registrationsPerMinute <= 0)
        return std::nullopt;
    auto [it, fresh] = m_addresses.try_emplace(host);
    Entry &e = it->second;
    if (fresh) {
        e.tokens = m_settings.registrationBurst;
        e.refilled = now;
    }
    refill(e, now);
    if (e.tokens >= 1) {
        e.tokens -= 1;
        return std::nullopt;
    }
    const double waitSeconds = std::ceil((1 - e.tokens) * 60 / m_settings.registrationsPerMinute);
    return "too many registrations from " + host + " (this coordinator accepts " +
           std::to_string(int(m_settings.registrationsPerMinute)) +
           " a minute from one address): the node tries again by itself; next chance in about " +
           std::to_string(int(waitSeconds)) + " s";
}

std::optional<std::string> AddressLimits::roomForNode(const std::string &host) const
{
    if (m_settings.maxNodesPerAddress == 0)
        return std::nullopt;
    const auto it = m_addresses.find(host);
    if (it == m_addresses.end() || it->second.nodes < m_settings.maxNodesPerAddress)
        return std::nullopt;
    return host + " already has " + std::to_string(it->second.nodes) +
           " nodes registered, the most this coordinator takes from one address: the node tries again by itself "
           "when one of them leaves";
}

void AddressLimits::nodeLinked(const std::string &host)
{
    auto [it, fresh] = m_addresses.try_emplace(host);
    if (fresh) {
        it->second.tokens = m_settings.registrationBurst;
        it->second.refilled = Clock::now();
    }
    ++it->second.nodes;
}

void AddressLimits::nodeUnlinked(const std::string &host)
{
    const auto it = m_addresses.find(host);
    if (it != m_addresses.end() && it->second.nodes > 0)
        --it->second.nodes;
}

void AddressLimits::prune(Clock::time_point now)
{
    for (auto it = m_addresses.begin(); it != m_addresses.end();) {
        Entry &e = it->second;
        refill(e, now);
        const bool idle =
            e.nodes == 0 && (m_settings.registrationsPerMinute <= 0 || e.tokens >= m_settings.registrationBurst);
        it = idle ? m_addresses.erase(it) : std::next(it);
    }
}

std::string hostOfRemote(const std::string &remote)
{
    try {
        return net::splitHostPort(remote).first;
    } catch (const Error &) {
        return remote; // no port: the text is the host
    }
}

} // namespace rookery::coord
