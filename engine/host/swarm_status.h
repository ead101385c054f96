// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/host/engine_snapshot.h"

namespace rookery::host {

/// A swarm as the desktop app draws it, read from its coordinator's status document
/// (docs/coordinator-api.md, "GET /v1/status"): every node with its cluster, stage and
/// speed, the pipeline and ring links, and where this node stands.
struct SwarmStatusView
{
    std::vector<PeerView> peers;
    std::vector<PeerLinkView> links;
    AssignmentView self; ///< mode "swarm"; cluster -1 while this node is not placed
    int64_t totalSteps = 0;
    double clusterLoss = 0; ///< what the leaf of this node's pipeline reports; 0 when unknown
};

/// Parses the status document; `selfId` is this node's id (marks it in the peers and
/// fills `self`). Throws rookery::Error on a document that is not the status JSON.
///
/// Thread safety: a pure function.
SwarmStatusView parseSwarmStatus(std::string_view json, const std::string &selfId);

/// GET https://host:port/v1/status, accepting only the certificate whose SHA-256 is
/// `pin` (the coordinator's, from its address). Everything, connect included, within
/// `timeout`. The public view, or the full one with the coordinator's operator token.
/// Returns the body; throws rookery::Error saying what failed.
///
/// Thread safety: may be called from any thread; blocks the caller up to `timeout`.
std::string fetchSwarmStatus(const std::string &host, uint16_t port, const std::string &pin,
                             std::chrono::milliseconds timeout, const std::string &operatorToken = {});

struct SwarmStatusFeedSettings
{
    std::string statusHost; ///< the coordinator's status API
    uint16_t statusPort = 0;
    std::string pin; ///< SHA-256 of the coordinator's certificate, from its address
    std::string selfId;
    std::chrono::milliseconds interval{2000};
};

/// A swarm node's place and its peers as the coordinator's status API reports them, for
/// the peer graph: read every `interval` on a thread of its own, so that nobody asking
/// waits on the network.
///
/// Thread safety: the callbacks run on the feed's thread, one at a time; the destructor
/// stops and joins it (up to one status request's timeout).
class SwarmStatusFeed
{
public:
    struct Callbacks
    {
        std::function<void(const SwarmStatusView &)> swarm;
        /// Once for each new kind of failure ("cannot reach the status API ..."), and ""
        /// once it works again.
        std::function<void(const std::string &)> problem;
    };

    SwarmStatusFeed(SwarmStatusFeedSettings settings, Callbacks callbacks);
    ~SwarmStatusFeed();
    SwarmStatusFeed(const SwarmStatusFeed &) = delete;
    SwarmStatusFeed &operator=(const SwarmStatusFeed &) = delete;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rookery::host
