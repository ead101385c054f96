// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/node/swarm_status.h"

namespace rookery::node {

struct NodeStatusFeedSettings
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
class NodeStatusFeed
{
public:
    struct Callbacks
    {
        std::function<void(const SwarmStatusView &)> swarm;
        /// Once for each new kind of failure ("cannot reach the status API ..."), and ""
        /// once it works again.
        std::function<void(const std::string &)> problem;
    };

    NodeStatusFeed(NodeStatusFeedSettings settings, Callbacks callbacks);
    ~NodeStatusFeed();
    NodeStatusFeed(const NodeStatusFeed &) = delete;
    NodeStatusFeed &operator=(const NodeStatusFeed &) = delete;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rookery::node
