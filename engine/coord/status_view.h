// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace rookery::coord {

/// Who reads the status document. The public view, for anyone who can reach the status
/// API, shows counts, clusters, rings and throughput, and leaves out what says where
/// volunteers are and what they have: their addresses (also inside reachability notes),
/// hardware figures, and the coordinator's own address. The full view, for the operator
/// (the token in operator_token.h), has everything.
enum class StatusView { Public, Full };

} // namespace rookery::coord
