// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/host/engine_api.h"

namespace rookery::ui {

/// Makes the engine the app drives, on the UI thread before the window appears; returns
/// nullptr when none is available, and the app then runs the SimulatedEngine and says
/// so in its title and log.
using EngineFactory = std::function<std::shared_ptr<host::EngineApi>()>;

/// Makes an engine that drives a headless rookery-node on this machine instead of
/// training in the app (--attach TARGET [--token-file FILE]): TARGET is the node's data
/// directory or its control port. Throws rookery::Error when TARGET makes no sense.
using AttachFactory =
    std::function<std::shared_ptr<host::EngineApi>(const std::string &target, const std::string &tokenFile)>;

/// The whole desktop app: parses the command line (--help, --version, --minimized,
/// --demo-swarm, --join, --local, --settings, --simulate, --attach, --token-file),
/// builds the window around the factory's engine (or the attach factory's, with
/// --attach) and runs the event loop. Returns the exit code.
int runDesktopApp(int argc, char **argv, const EngineFactory &factory, const AttachFactory &attach = {});

} // namespace rookery::ui
