// SPDX-License-Identifier: GPL-3.0-or-later
// JSON forms of the coordinator's values, for its database and its status API.
#pragma once

#include <string>
#include <string_view>

#include "engine/coord/assignment.h"

namespace rookery::coord {

/// Stable field order. The inverses throw rookery::Error on malformed input.
std::string toJson(const Assignment &assignment);
Assignment assignmentFromJson(std::string_view json);

std::string toJson(const RunConfig &run);
RunConfig runConfigFromJson(std::string_view json);

} // namespace rookery::coord
