// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "engine/net/link.h"
#include "engine/net/net_context.h"
#include "engine/net/tls_credentials.h"

namespace rookery::coord {

struct ReachabilityProbeConfig
{
    net::TlsCredentials credentials;           ///< the coordinator's CA-signed certificate: nodes' listeners check it
    net::LinkConfig link;                      ///< role Coordinator, so that the node knows the link for a check
    std::chrono::milliseconds timeout{20'000}; ///< a node's listener opens after registration: allow for it
    /// A connection refused this long after the check began is the verdict: nothing
    /// listens there (a router that answers for a port it does not forward, a node
    /// without a listener). Sooner, it is tried again: the listener may not be open yet.
    std::chrono::milliseconds refusedAfter{2'000};
    /// Checks in flight; the rest wait their turn. A check of a node behind NAT lasts the
    /// whole timeout, so a crowd of 10,000 is checked in about 20 s x 10,000 / this.
    size_t maxConcurrent = 512;
};

/// Whether peers can dial a node: the coordinator dials the node's advertised address
/// and completes the mutual-TLS handshake and Hello with the node's own certificate,
/// exactly as a peer would. A node behind NAT with no mapped or forwarded port fails
/// within `timeout`, or once its address still refuses connections `refusedAfter` into
/// the check; so does an address that is not the node's (the handshake checks its node
/// id).
///
/// Thread safety: all methods may be called from any thread. `result` is never called
/// under a lock of the probe's: it may take the caller's locks.
class ReachabilityProbe
{
public:
    using Clock = std::chrono::steady_clock;
    /// The verdict on one node's address. `note` says why, in words for the volunteer.
    using Result = std::function<void(const std::string &nodeId, const std::string &address, bool reachable,
                                      const std::string &note)>;

    ReachabilityProbe(net::NetContext &context, ReachabilityProbeConfig config, Result result);
    ~ReachabilityProbe(); ///< closes the checks in flight; no result after it returns

    /// Queues a check of `nodeId` at `address` ("host:port"), replacing one queued or in
    /// flight for the same node. Starts at the next tick(). Cheap: may be called under locks.
    void check(const std::string &nodeId, const std::string &address);
    /// Starts queued checks and gives up on those past their deadline.
    void tick(Clock::time_point now);
    size_t inFlight() const;

private:
    struct State;
    std::shared_ptr<State> m;
};

} // namespace rookery::coord
