// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "engine/coord/coordinator.h"

namespace rookery::app {

/// Everything rookery-coordinator can be told on its command line.
struct CoordinatorOptions
{
    coord::CoordinatorSettings settings;
    bool quiet = false;
    /// `rookery-coordinator invite`: make a join token, print the join string with it and
    /// exit (with `inviteList`: list the invites instead).
    bool invite = false;
    int64_t inviteUses = 1;
    int64_t inviteDays = 7;
    std::string inviteNote;
    bool inviteList = false;
};

/// Parses argv into `options`; a first word "invite" sets `invite`. Returns false when
/// --help or --version was shown.
/// Throws rookery::Error on bad input.
bool parseCoordinatorOptions(int argc, char **argv, CoordinatorOptions &options);

} // namespace rookery::app
