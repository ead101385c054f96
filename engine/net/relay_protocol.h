// SPDX-License-Identifier: GPL-3.0-or-later
// The relay port's preamble (docs/protocol.md, "Relayed links"): what a node sends on
// connecting to a relay, and the one byte the relay answers, before the two nodes run
// mutual TLS over the spliced stream. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rookery::net {

inline constexpr std::string_view kRelayMagic = "RKRELAY1";
inline constexpr size_t kRelayTokenBytes = 16;
inline constexpr size_t kRelayPreambleBytes = 24; ///< the magic, then the token

/// The relay's one-byte answer; after Paired the stream is the peer's.
enum class RelayReply : uint8_t { Paired = 0, UnknownToken = 1, Full = 2, PartnerMissing = 3 };

/// A sentence for logs and the user; any byte value is accepted (an unknown code is
/// named as such).
inline std::string describeRelayReply(RelayReply reply)
{
    switch (reply) {
    case RelayReply::Paired:
        return "the relay paired this connection with its partner";
    case RelayReply::UnknownToken:
        return "the relay refused the token: it is unknown, already used or expired (or the greeting was malformed)";
    case RelayReply::Full:
        return "the relay is full: it holds as many connections as it may";
    case RelayReply::PartnerMissing:
        return "the partner did not reach the relay within the pair timeout";
    }
    return "the relay answered with an unknown reply code " + std::to_string(int(reply));
}

/// The 24 bytes a node sends: the magic and its 16-byte token.
inline std::string relayPreamble(std::string_view token) { return std::string(kRelayMagic) + std::string(token); }

} // namespace rookery::net
