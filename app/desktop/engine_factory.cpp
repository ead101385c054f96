// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/desktop/engine_factory.h"

namespace rookery::app {

ui::EngineFactory desktopEngineFactory()
{
    // The in-process engine (engine/node) plugs in here: return a factory that makes it.
    return {};
}

} // namespace rookery::app
