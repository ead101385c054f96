// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rookery::net {

/// How a node finds its coordinator: `wss://host:port/path#sha256=<64 hex digits>`.
/// The fragment pins the SHA-256 of the certificate the coordinator presents; a node
/// refuses any other certificate, whoever signed it. IPv6 hosts go in brackets
/// (`wss://[::1]:7400/#sha256=...`); the port defaults to 443 and the path to "/".
///
/// Thread safety: a plain value.
struct CoordinatorAddress
{
    std::string host;
    uint16_t port = 443;
    std::string path = "/";
    std::string sha256; ///< lowercase hex, 64 digits

    /// Throws rookery::Error naming the address and what is wrong with it.
    static CoordinatorAddress parse(std::string_view text);
    std::string toString() const;
    bool operator==(const CoordinatorAddress &) const = default;
};

} // namespace rookery::net
