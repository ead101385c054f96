// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "engine/coord/status_json.h"

namespace rookery::coord {

/// GET /metrics on the status port: the coordinator's figures in Prometheus' text
/// exposition format 0.0.4, from the same inputs as GET /v1/status
/// (docs/operator-guide.md, "Metrics").
///
/// Thread safety: a plain function.
std::string coordinatorMetrics(const StatusInputs &inputs);

} // namespace rookery::coord
