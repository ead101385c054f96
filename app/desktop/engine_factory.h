// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "ui/main/desktop_app.h"

namespace rookery::app {

/// The engine the desktop app drives: the in-process host::NodeEngine, with its data in
/// the default data directory. (--simulate still picks the simulation.)
///
/// Call it in main() before the QApplication exists: it lowers the threads that
/// libraries started at load time to compute priority (see the definition).
ui::EngineFactory desktopEngineFactory();

} // namespace rookery::app
