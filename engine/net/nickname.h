// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace rookery::net {

/// The name a node shows others when its volunteer gave none: two words and two hex
/// digits drawn from its node id ("amber-heron-3f"). The same key always gives the same
/// nickname, so a node keeps its name across restarts, and it says nothing about the
/// machine (a host name often carries the owner's name).
///
/// Thread safety: a pure function.
std::string nicknameFor(const std::string &nodeId);

} // namespace rookery::net
