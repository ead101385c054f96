// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "ui/main/desktop_app.h"

namespace rookery::app {

/// The engine the desktop app drives. Returns an empty factory while the in-process
/// engine is not built in: the app then runs the simulation and says so.
ui::EngineFactory desktopEngineFactory();

} // namespace rookery::app
