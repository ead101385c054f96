// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace rookery::app {

/// `rookery-coordinator dataset add|list ...`: adds a dataset in IDX format to the
/// coordinator's store (cut into shards, hashed) or lists what the store holds. `args`
/// starts with the program's name, then "add" or "list". Prints to stdout what an
/// operator needs (the content hash for a job file); returns the exit status (2 for a bad
/// command line, 1 for bad data).
int runDatasetCommand(const std::vector<std::string> &args);

} // namespace rookery::app
