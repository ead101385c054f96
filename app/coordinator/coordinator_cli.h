// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "engine/coord/coordinator.h"

namespace rookery::app {

/// Everything rookery-coordinator can be told on its command line.
struct CoordinatorOptions
{
    coord::CoordinatorSettings settings;
    bool quiet = false;
    /// `rookery-coordinator invite`: print the running coordinator's join string and exit.
    bool invite = false;
};

/// Parses argv into `options`; a first word "invite" sets `invite`. Returns false when
/// --help or --version was shown.
/// Throws rookery::Error on bad input.
bool parseCoordinatorOptions(int argc, char **argv, CoordinatorOptions &options);

} // namespace rookery::app
