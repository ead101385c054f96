// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/coord: between the coordinator's value types and the wire
// messages of engine/net (which mirror the schema and know nothing of models).
#pragma once

#include "engine/coord/assignment.h"
#include "engine/net/wire_codec.h"
#include "engine/net/wire_message.h"

namespace rookery::coord {

/// Limits of node-coordinator links, on both ends: assignments carry ring member lists
/// that grow with the swarm, so lists and headers may be larger than between peers.
net::WireLimits coordinatorLinkLimits();
/// What the coordinator accepts from a node: registrations, heartbeats, relay requests
/// and goodbyes are small (a registration's profile is about 1 KiB), so anyone who can
/// reach it makes it hold at most 64 KiB per link before it is even registered.
net::WireLimits coordinatorInboundLimits();

net::AssignmentInfo toWire(const Assignment &assignment);
Assignment fromWire(const net::AssignmentInfo &assignment);

net::RunInfo toWire(const RunConfig &run);
/// Throws rookery::Error when the model or optimizer JSON is malformed or invalid.
RunConfig fromWire(const net::RunInfo &run);

net::NodeMetrics toWire(const NodeReport &report);
NodeReport fromWire(const net::NodeMetrics &metrics);

} // namespace rookery::coord
