// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/data/image_dataset.h"
#include "engine/device/capability_profile.h"
#include "engine/net/coordinator_address.h"
#include "engine/net/identity.h"
#include "engine/participant/swarm_node.h"
#include "engine/store/checkpoint_store.h"

namespace rookery::participant {

/// What a swarm node makes ready before it joins: everything that can fail on bad
/// input, so that a mistake shows before the coordinator hears of the node.
///
/// Thread safety: a plain value; the checkpoint store is safe from any thread.
struct PreparedNode
{
    net::CoordinatorAddress address;
    net::Identity identity; ///< this node's key, made on the first run
    /// This machine's own copy of Fashion-MNIST (whole); null without one.
    std::shared_ptr<const data::ImageDataset> train;
    std::shared_ptr<const data::ImageDataset> test;
    std::unique_ptr<store::CheckpointStore> checkpoints;
    std::string profileJson; ///< the capability profile, as the coordinator reads it
    /// As measured, before the caps: what a later offer (other caps) is made from.
    device::CapabilityProfile measured;
    double offeredGflops = 0; ///< what the caps offered at start, as registered (before any claim)
    uint16_t port = 0;        ///< where this node listens for its peers
    std::string advertised;   ///< what it tells the coordinator: advertisedAddress()
};

/// The listening address a node tells the coordinator, as "host:port":
/// - `publicAddress` "host:port" as given, or "host" with the listening port;
/// - else the bind address with the listening port;
/// - else, bound to every interface, ":port": the coordinator fills in the address the
///   node's connection came from.
/// Throws rookery::Error naming a `publicAddress` that is not host or host:port.
std::string advertisedAddress(const std::string &bindAddress, const std::string &publicAddress, uint16_t port);

/// Checks the coordinator address, makes the data directory private, loads or makes
/// the identity key, loads Fashion-MNIST (train and test) when `settings.datasetDir` has
/// a copy (a damaged one is skipped, with a warning), opens the checkpoint
/// database, loads the capability profile (cached) and picks the peer port: `--port`,
/// else the port of the last run when it is still free (kept in the data directory),
/// else any free one. Fills in a nickname (net::nicknameFor) when `settings.name` is empty. Throws
/// rookery::Error for bad settings, data or database.
///
/// Thread safety: any thread; two calls for the same data directory race on its files.
PreparedNode prepareSwarmNode(SwarmNodeSettings &settings);

} // namespace rookery::participant
