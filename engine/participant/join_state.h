// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace rookery::participant {

/// How far a node has got in joining its swarm, as the node itself knows it: its link
/// to the coordinator, its registration and its place. (Whether peers can dial it is
/// the coordinator's verdict, which the status API tells.)
///
/// Thread safety: a plain value.
struct JoinState
{
    bool connected = false;      ///< the link to the coordinator is up
    std::string connectProblem;  ///< why the last attempt to connect failed; "" after a success
    bool registered = false;     ///< the coordinator accepted this node (on this connection)
    std::string registerProblem; ///< why the coordinator refused it
    bool gaveUp = false;         ///< retrying cannot help (a refusal, a certificate that is not the pinned one)
    std::string placement;       ///< "stage 1 of 2 in cluster 1 of 3"; "" while it has none
    std::string waiting;         ///< why it has no place yet, as the coordinator says
    bool operator==(const JoinState &) const = default;
};

} // namespace rookery::participant
