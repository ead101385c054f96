// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/common/token_bucket.h"
#include "engine/net/wire_codec.h"

namespace rookery::net {

/// Settings of one link; the same for both ends unless noted.
struct LinkConfig
{
    WireLimits limits; ///< what this side accepts (and, unless maxSendBytes says more, sends)
    /// The largest frame send() takes; 0: limits.maxMessageBytes. A coordinator takes
    /// small frames from anyone but sends large assignments.
    uint64_t maxSendBytes = 0;
    NodeRole role = NodeRole::Node;
    std::string nodeId; ///< sent in Hello; must match our certificate on TLS links
    uint32_t minVersion = kOldestProtocolVersion;
    uint32_t maxVersion = kProtocolVersion;
    Compression compression = Compression::None; ///< dialler: what it asks for
    bool acceptCompression = true;               ///< acceptor: agree when asked
    size_t maxQueuedBytes = 64u << 20;           ///< send() refuses beyond this (backpressure)
    size_t maxQueuedMessages = 1024;
    std::chrono::milliseconds handshakeTimeout{10'000}; ///< connect + TLS + WebSocket + Hello
    /// With no traffic for half of it a WebSocket ping goes out; with none for all of
    /// it the link closes.
    std::chrono::milliseconds idleTimeout{30'000};
    /// The governor's caps, shared by every link of the process (null: unlimited).
    std::shared_ptr<TokenBucket> upload, download;
};

/// Who is at the other end, known once the link is open.
struct PeerInfo
{
    std::string nodeId; ///< from the peer's certificate on TLS links
    std::string address;
    NodeRole role = NodeRole::Node;
    uint32_t version = 0;
    Compression compression = Compression::None;
    std::vector<std::string> features;
    std::string software;
    std::string cipher; ///< the TLS cipher suite ("TLS_AES_128_GCM_SHA256"); empty without TLS
};

/// Why a link closed.
struct CloseInfo
{
    std::string reason;
    bool byPeer = false;         ///< the other end closed or refused
    bool clean = false;          ///< an orderly close, not an error
    bool fatal = false;          ///< retrying cannot help (certificate refused, no common version)
    bool reconnecting = false;   ///< a dialled link will try again after a back-off
    bool nothingListens = false; ///< the connection was refused: nothing listens at the address
};

struct LinkStats
{
    uint64_t bytesSent = 0;
    uint64_t bytesReceived = 0;
    uint64_t messagesSent = 0;
    uint64_t messagesReceived = 0;
    size_t queuedBytes = 0;
    size_t queuedMessages = 0;
};

enum class SendResult {
    Queued,
    QueueFull, ///< maxQueuedBytes or maxQueuedMessages reached; `writable` follows
    NotOpen,   ///< not yet open, closing, or closed (a dialled link may be reconnecting)
    TooLarge,  ///< bigger than limits.maxMessageBytes
};

/// One authenticated, encrypted connection to a peer (or, for a dialled link, the
/// connection it keeps re-establishing). Messages go out in send() order.
///
/// Thread safety: every method may be called from any thread. Events are delivered on
/// the NetContext's I/O thread, one at a time per link; they must not block.
class Link
{
public:
    virtual ~Link() = default;

    /// Encodes `message` on the calling thread (tensor bytes are referenced, not
    /// copied, unless the link compresses them) and queues it.
    /// Throws rookery::Error when a tensor's bytes do not match its shape.
    [[nodiscard]] virtual SendResult send(const Message &message) = 0;
    /// Sends what is queued, then Goodbye{reason}, then closes. A dialled link stops
    /// reconnecting.
    virtual void close(const std::string &reason = "closed") = 0;
    virtual bool isOpen() const = 0;
    virtual PeerInfo peer() const = 0;
    virtual LinkStats stats() const = 0;
    /// "127.0.0.1:7400 (node 1f2e3d4c...)" for log lines.
    virtual std::string describe() const = 0;
};

/// Callbacks of links. All run on the I/O thread; any may be empty.
struct LinkEvents
{
    /// The Hello exchange succeeded: send() works from now on.
    std::function<void(const std::shared_ptr<Link> &)> opened;
    /// A message other than the link's own (Hello, HelloAck, Ping, Goodbye) arrived.
    /// Tensors point into the received frame, which they keep alive.
    std::function<void(const std::shared_ptr<Link> &, Message &&)> message;
    /// After send() returned QueueFull: the queue has drained to half.
    std::function<void(const std::shared_ptr<Link> &)> writable;
    /// Called once per connection that had started (also when it never opened).
    std::function<void(const std::shared_ptr<Link> &, const CloseInfo &)> closed;
};

} // namespace rookery::net
