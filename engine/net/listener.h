// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/net/link.h"
#include "engine/net/net_context.h"
#include "engine/net/tls_credentials.h"

namespace rookery::net {

struct ListenerConfig
{
    std::string bindAddress = "0.0.0.0";
    uint16_t port = 0; ///< 0: an ephemeral port (see Listener::port())
    TlsCredentials credentials;
    PeerCheck clients; ///< SwarmCa between peers; AnyCertificate for registration
    LinkConfig link;
    size_t maxLinks = 256; ///< connections beyond this are closed at once
    /// Connections from one IP address beyond this are closed at once (0: no cap), so
    /// that one host cannot take every place.
    size_t maxLinksPerAddress = 0;
};

/// Connections the listener closed at once, since it started.
struct ListenerCounters
{
    uint64_t accepted = 0;
    uint64_t refusedFull = 0;       ///< maxLinks reached
    uint64_t refusedPerAddress = 0; ///< maxLinksPerAddress reached for the address
};

/// Accepts TLS WebSocket links. Each connection runs its own handshakes; one that
/// fails (a certificate refused, a plaintext client, a malformed frame) is closed with
/// a logged reason while the others carry on.
///
/// Events: `opened`, `message`, `writable` as for any Link; `closed` only for links
/// that had opened (failed handshakes are logged, not reported).
///
/// Thread safety: all methods may be called from any thread. Events arrive on the
/// NetContext's thread.
class Listener
{
public:
    /// Binds at once; throws rookery::Error when the address cannot be bound or the
    /// credentials are unusable.
    Listener(NetContext &context, ListenerConfig config, LinkEvents events);
    ~Listener();
    Listener(const Listener &) = delete;
    Listener &operator=(const Listener &) = delete;

    uint16_t port() const;
    /// Stops accepting and closes every link (Goodbye "the listener stopped"). Idempotent.
    void stop();
    /// Links currently connected (including those still in their handshakes).
    size_t linkCount() const;
    ListenerCounters counters() const;
    /// New credentials (a renewed certificate) for the connections accepted from now on;
    /// links already open keep theirs. Throws rookery::Error when they are unusable.
    void setCredentials(const TlsCredentials &credentials);

    struct Impl;

private:
    std::shared_ptr<Impl> m;
};

} // namespace rookery::net
