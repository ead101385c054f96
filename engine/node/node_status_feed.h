// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/node/engine_snapshot.h"
#include "engine/node/swarm_status.h"

namespace rookery::node {

struct NodeStatusFeedSettings
{
    std::filesystem::path database; ///< the node's rookery.db
    /// The coordinator's status API; an empty host for a local run (no swarm view).
    std::string statusHost;
    uint16_t statusPort = 0;
    std::string pin; ///< SHA-256 of the coordinator's certificate, from its address
    std::string selfId;
    std::chrono::milliseconds interval{2000};
};

/// What the desktop app shows of a node besides its progress: the checkpoints in the
/// node's database and, in a swarm, the node's place and its peers as the coordinator's
/// status API reports them. Reads both every `interval` on a thread of its own, so that
/// nobody asking waits on SQLite or the network. rookery-node keeps its control API's
/// view with it; the app's SwarmJob its peer graph (without checkpoints, listed by the
/// engine).
///
/// Thread safety: the callbacks run on the feed's thread, one at a time; the destructor
/// stops and joins it (up to one status request's timeout).
class NodeStatusFeed
{
public:
    struct Callbacks
    {
        std::function<void(std::vector<CheckpointView>)> checkpoints; ///< newest first
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
