// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <functional>
#include <memory>

#include "engine/node/engine_api.h"

namespace rookery::ui {

/// Makes the engine the app drives, on the UI thread before the window appears; returns
/// nullptr when none is available, and the app then runs the SimulatedEngine and says
/// so in its title and log.
using EngineFactory = std::function<std::shared_ptr<node::EngineApi>()>;

/// The whole desktop app: parses the command line (--help, --version, --minimized,
/// --demo-swarm, --join, --local, --settings, --simulate), builds the window around the
/// factory's engine and runs the event loop. Returns the exit code.
int runDesktopApp(int argc, char **argv, const EngineFactory &factory);

} // namespace rookery::ui
