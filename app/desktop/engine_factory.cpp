// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/desktop/engine_factory.h"

#include "engine/device/thread_priority.h"
#include "engine/host/node_engine.h"

namespace rookery::app {

ui::EngineFactory desktopEngineFactory()
{
    // Before the QApplication exists the only other threads are those libraries started
    // when they loaded (OpenBLAS's workers, started from the main thread and so at its
    // priority): they are compute, so they go down to nice 19 with the engine's own
    // threads, while every thread Qt starts later stays at the UI's priority.
    device::lowerOtherThreadsPriority();
    return [] { return std::make_shared<host::NodeEngine>(host::defaultNodeEngineSettings()); };
}

} // namespace rookery::app
