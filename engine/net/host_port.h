// SPDX-License-Identifier: GPL-3.0-or-later
// "host:port" as peers and the coordinator write a listening address. Header-only.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <utility>

#include "engine/common/error.h"

namespace rookery::net {

/// "::1" for "[::1]"; any other text as it is.
inline std::string unbracketed(const std::string &host)
{
    return host.size() >= 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
}

/// "[::1]" for an IPv6 address, as "host:port" writes it; any other host as it is.
inline std::string bracketed(const std::string &host)
{
    return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

/// Splits "host:port" ("[v6]:port" for IPv6; the brackets are dropped). Throws
/// rookery::Error "peer address 'TEXT' is not host:port".
inline std::pair<std::string, uint16_t> splitHostPort(const std::string &address)
{
    const auto colon = address.rfind(':');
    if (colon == std::string::npos || colon + 1 >= address.size())
        throw Error("peer address '" + address + "' is not host:port");
    const std::string host = unbracketed(address.substr(0, colon));
    unsigned port = 0;
    const char *begin = address.data() + colon + 1, *end = address.data() + address.size();
    auto [p, ec] = std::from_chars(begin, end, port);
    if (ec != std::errc() || p != end || port == 0 || port > 65535 || host.empty())
        throw Error("peer address '" + address + "' is not host:port");
    return {host, uint16_t(port)};
}

} // namespace rookery::net
