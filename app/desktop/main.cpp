// SPDX-License-Identifier: GPL-3.0-or-later
// rookery: the desktop app.
#include "app/desktop/engine_factory.h"
#include "ui/main/desktop_app.h"

int main(int argc, char **argv) { return rookery::ui::runDesktopApp(argc, argv, rookery::app::desktopEngineFactory()); }
