// SPDX-License-Identifier: GPL-3.0-or-later
// The relay port's wire protocol, for the relay (relay_server.h) and for the nodes that
// dial it. A client sends kRelayPreambleBytes: kRelayMagic, then its 16-byte token. The
// relay answers one RelayReply byte; after Paired the connection carries the partner's
// bytes unchanged (the two nodes run their mutual TLS over it), after any other reply
// the relay closes it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/net/relay_protocol.h"

namespace rookery::relay {

/// A single-use pairing token, handed to a node over its coordinator link.
using Token = std::array<uint8_t, 16>;

// The greeting and the replies are the wire protocol's (engine/net/relay_protocol.h):
// the relay and the nodes that dial it share one definition.
using net::kRelayMagic;
using net::kRelayPreambleBytes;
using net::RelayReply;
static_assert(kRelayMagic.size() + std::tuple_size_v<Token> == kRelayPreambleBytes);

/// The token in exactly 16 bytes; throws rookery::Error for any other length.
Token tokenFromBytes(std::string_view bytes);
/// The token's 16 raw bytes.
std::string tokenToBytes(const Token &token);
/// A fresh token from the system's CSPRNG; throws rookery::Error when that fails.
Token randomToken();
/// The 24 bytes a client sends first: kRelayMagic + token.
std::string relayPreamble(const Token &token);
using net::describeRelayReply;

} // namespace rookery::relay
