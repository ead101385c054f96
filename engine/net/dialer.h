// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/net/coordinator_address.h"
#include "engine/net/link.h"
#include "engine/net/net_context.h"
#include "engine/net/tls_credentials.h"

namespace rookery::net {

struct DialConfig
{
    std::string host;
    uint16_t port = 0;
    std::string path = "/rookery";
    TlsCredentials credentials;
    PeerCheck server; ///< SwarmCa for peers, PinnedCertificate for the coordinator
    LinkConfig link;
    /// After a connection drops or fails, try again after a back-off that doubles from
    /// `initialBackoff` to `maxBackoff`, with jitter; not after close() or a fatal
    /// refusal (a certificate refused, no common protocol version).
    bool reconnect = true;
    std::chrono::milliseconds initialBackoff{250};
    std::chrono::milliseconds maxBackoff{30'000};
    /// The back-off starts over only after a link that stayed open this long: one the
    /// other end closes just after its handshake (a peer whose assignment does not name
    /// this node yet: "not a neighbour") is dialled less and less often, not ten times a
    /// second.
    std::chrono::milliseconds stableAfter{5'000};
    /// Connect from this local IP address ("": the system's choice). Tests use it to
    /// come from a second loopback address (127.0.0.2).
    std::string localAddress;
};

/// Settings to reach a coordinator: its host, port and path, and its pinned certificate.
DialConfig coordinatorDialConfig(const CoordinatorAddress &address, TlsCredentials credentials, LinkConfig link);

/// A link to a peer through a relay (the coordinator's RelayGrant): connect to the relay
/// at host:port, present `token`, then run mutual TLS with the peer over the spliced
/// stream, as TLS server when `accept` (the peer dials), else as client. The relay sees
/// only TLS records.
struct RelayedDialConfig
{
    std::string host;
    uint16_t port = 0;
    std::string token; ///< 16 bytes, single use
    bool accept = false;
    std::string path = "/rookery";
    TlsCredentials credentials;
    PeerCheck peer; ///< SwarmCa with the peer's node id
    LinkConfig link;
};

/// Never reconnects (a token serves once): when it closes, the owner asks for another
/// grant. `closed` comes also when it never opened.
///
/// Thread safety: may be called from any thread; events arrive on the NetContext's thread.
std::shared_ptr<Link> dialRelayed(NetContext &context, RelayedDialConfig config, LinkEvents events);

/// A link to `config.host:port` that connects in the background and, with
/// `reconnect`, keeps reconnecting. The events name this same Link object across
/// reconnections: `opened` after each successful handshake, `closed` after each
/// connection (CloseInfo::reconnecting says whether another attempt follows).
///
/// Thread safety: may be called from any thread; events arrive on the NetContext's thread.
std::shared_ptr<Link> dial(NetContext &context, DialConfig config, LinkEvents events);

} // namespace rookery::net
