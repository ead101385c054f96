// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "engine/coord/coordinator.h"

namespace rookery::app {

/// Everything rookery-coordinator can be told on its command line.
struct CoordinatorOptions
{
    coord::CoordinatorSettings settings;
    bool quiet = false;
};

/// Parses argv into `options`. Returns false when --help or --version was shown.
/// Throws rookery::Error on bad input.
bool parseCoordinatorOptions(int argc, char **argv, CoordinatorOptions &options);

} // namespace rookery::app
