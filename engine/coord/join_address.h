// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>

#include "engine/net/coordinator_address.h"

namespace rookery::coord {

/// The join string (the coordinator's address with its certificate's pin) is kept in
/// DIR/join-address while the coordinator runs, for `rookery-coordinator invite`.
std::filesystem::path joinAddressPath(const std::filesystem::path &dataDir);

/// Writes it (replacing the file whole). Throws rookery::Error when it cannot.
void writeJoinAddress(const std::filesystem::path &dataDir, const net::CoordinatorAddress &address);

/// The join string of the coordinator whose data directory is `dataDir`, with its host
/// replaced by `publicHost` when that is given. Throws rookery::Error saying what to do
/// when there is none (the coordinator never started there) or it is damaged.
std::string readJoinAddress(const std::filesystem::path &dataDir, const std::string &publicHost = {});

} // namespace rookery::coord
