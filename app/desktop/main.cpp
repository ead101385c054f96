// SPDX-License-Identifier: GPL-3.0-or-later
// rookery: the desktop app.
#include "app/desktop/engine_factory.h"
#include "engine/control/remote_engine.h"
#include "ui/main/desktop_app.h"

int main(int argc, char **argv)
{
    using namespace rookery;
    // --attach: drive a headless rookery-node over its control API instead of an engine of our own.
    const ui::AttachFactory attach = [](const std::string &target, const std::string &tokenFile) {
        return std::make_shared<control::RemoteEngine>(control::RemoteTarget::parse(target, tokenFile));
    };
    return ui::runDesktopApp(argc, argv, app::desktopEngineFactory(), attach);
}
