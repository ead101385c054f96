// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "engine/relay/relay_protocol.h"

namespace rookery::relay {

struct RelaySettings
{
    std::string bindAddress; ///< "": every interface, IPv4 and IPv6
    uint16_t port = 0;       ///< 0: an ephemeral port (see port())
    size_t maxPairs = 1024;  ///< registered and spliced pairs together
    size_t maxPairsPerNode = 8;
    uint64_t bytesPerSecondPerPair = 0; ///< 0: no cap; else each direction is held to it (bursts: 50 ms worth)
    std::chrono::milliseconds pairTimeout{15000};  ///< both tokens must arrive this soon after expectPair()
    std::chrono::milliseconds idleTimeout{120000}; ///< a spliced pair with no bytes this long is closed
    size_t bufferBytes = 64 * 1024;                ///< per direction of a spliced pair
    int threads = 1;
    std::chrono::milliseconds preambleTimeout{5000}; ///< the 24-byte greeting must arrive this soon
    size_t maxPendingConnections = 256;              ///< connections whose greeting is not read yet; more get Full
    /// Of those, from one IP address (0: no cap); more get Full. Honest nodes greet at
    /// once, so one host holding many greeting connections is filling the relay.
    size_t maxPendingPerAddress = 64;
};

struct RelayCounters
{
    uint64_t bytesRelayed = 0; ///< spliced bytes, both directions, not counting the reply bytes
    uint64_t pairsOpened = 0;  ///< pairs spliced since start
    uint64_t pairsActive = 0;  ///< pairs spliced now
    uint64_t refused = 0;      ///< connections answered with a refusal (UnknownToken, Full, PartnerMissing)
};

/// The relay: lets two nodes that cannot dial each other (both behind NAT) link through
/// a third party. The coordinator registers a pair with expectPair() and hands each node
/// its token over the node's authenticated coordinator link; both nodes dial the relay
/// port and send their token (relay_protocol.h); the relay answers Paired to both and
/// from then on copies bytes both ways, unchanged, until either side closes (it then
/// flushes what it holds towards the other side and closes that too). The nodes run
/// their usual mutual TLS over the spliced stream, so the relay sees only ciphertext.
///
/// Bounded: pairs (maxPairs, maxPairsPerNode), connections still sending their greeting
/// (maxPendingConnections, maxPendingPerAddress; each holds only a 24-byte buffer until its token is seen),
/// two buffers of bufferBytes per spliced pair, and timeouts on every phase.
///
/// Runs its own io_context on its own threads (settings.threads). Logs in area "relay".
///
/// Thread safety: all methods may be called from any thread, except that the destructor
/// must not run on one of the relay's own threads (from inside the tap).
class RelayServer
{
public:
    using Tap = std::function<void(const uint8_t *data, size_t size)>;

    /// Binds and starts at once; throws rookery::Error when it cannot (address in use, not
    /// an IP address).
    explicit RelayServer(RelaySettings settings);
    /// Stops, closes every connection and joins its threads.
    ~RelayServer();
    RelayServer(const RelayServer &) = delete;
    RelayServer &operator=(const RelayServer &) = delete;

    /// The port it listens on (the one the system chose when settings.port was 0).
    uint16_t port() const;

    /// Registers a pair of nodes: returns two fresh random single-use tokens, the first
    /// for aNodeId and the second for bNodeId, valid for settings.pairTimeout. Throws
    /// rookery::Error with a sentence naming the limit when a node is at its cap, when the
    /// relay is full, or when both ids are the same.
    std::pair<Token, Token> expectPair(const std::string &aNodeId, const std::string &bNodeId);
    /// The same with tokens chosen elsewhere (a volunteer's relay: the coordinator deals
    /// them, RelayExpect). Also throws when the tokens are equal or already in use.
    void expectPair(const std::string &aNodeId, const std::string &bNodeId, const Token &aToken, const Token &bToken);

    RelayCounters counters() const;

    /// For tests: called with every relayed byte (both directions, in the order each
    /// direction carries them; not the reply bytes), on a relay thread. An empty function
    /// removes the tap.
    void setTap(Tap tap);

    struct Impl;

private:
    std::pair<Token, Token> expectPair(const std::string &aNodeId, const std::string &bNodeId,
                                       const std::optional<std::pair<Token, Token>> &given);

    std::unique_ptr<Impl> m;
};

} // namespace rookery::relay
