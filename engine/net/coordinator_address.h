// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rookery::net {

/// How a node finds its coordinator: `wss://host:port/path#sha256=<64 hex digits>`.
/// The fragment pins the SHA-256 of the public key (DER SubjectPublicKeyInfo) of the
/// certificate the coordinator presents, so that a renewed certificate keeps the pin; a
/// node refuses a certificate for any other key, whoever signed it. (A SHA-256 of the
/// whole certificate, as older join strings have, is accepted too.) IPv6 hosts go in brackets
/// (`wss://[::1]:7400/#sha256=...`); the port defaults to 443 and the path to "/".
/// An invite-only coordinator's join string carries a join token after the pin:
/// `...#sha256=<64 hex digits>&invite=<token>`; the node sends it with its registration.
///
/// Thread safety: a plain value.
struct CoordinatorAddress
{
    std::string host;
    uint16_t port = 443;
    std::string path = "/";
    std::string sha256; ///< lowercase hex, 64 digits
    std::string invite; ///< the join token; empty: none (an open coordinator, or a known node)

    /// Throws rookery::Error naming the address and what is wrong with it.
    static CoordinatorAddress parse(std::string_view text);
    std::string toString() const;
    bool operator==(const CoordinatorAddress &) const = default;
};

/// Whether `token` has the form of a join token: 16 to 128 of [A-Za-z0-9_-].
bool validInvite(std::string_view token);

} // namespace rookery::net
