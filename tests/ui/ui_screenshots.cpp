// SPDX-License-Identifier: GPL-3.0-or-later
// ui_screenshots: renders the screenshots in docs/screenshots from the real widgets,
// driven for a while (90 s by default) so the charts hold real polled points: by the
// real in-process engine on the local demo swarm of four nodes (the programs it starts
// are taken from build-ui/app), or with --simulate by the SimulatedEngine.
//   xvfb-run -a -s "-screen 0 1600x1000x24" build-ui/tests/ui/ui_screenshots docs/screenshots [seconds] [--simulate]
#include <cstdio>

#include <QApplication>
#include <QDir>
#include <QEventLoop>
#include <QSettings>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>

#include "engine/host/node_engine.h"
#include "ui/consent/consent_dialog.h"
#include "ui/main/desktop_controller.h"
#include "ui/main/main_window.h"
#include "ui/settings/settings_dialog.h"
#include "ui/settings/settings_fields.h"
#include "ui/sim/simulated_engine.h"
#include "ui/theme/theme.h"

using namespace rookery;

namespace {

// Runs the event loop for `ms`, asleep between events. A loop around processEvents()
// would spin a core, and the governor counts the whole process's processor time against
// its cap: the in-process node would then get no share at all.
void settle(int ms)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

bool save(QWidget *w, const QString &path)
{
    w->repaint();
    settle(200);
    const bool ok = w->grab().save(path);
    std::printf("%s %s (%dx%d)\n", ok ? "wrote" : "FAILED", qPrintable(path), w->width(), w->height());
    return ok;
}

} // namespace

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("rookery"));
    const QString out = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral(".");
    const int seconds = argc > 2 ? std::atoi(argv[2]) : 90;
    const bool simulate = QApplication::arguments().contains(QStringLiteral("--simulate"));
    QDir().mkpath(out);
    QTemporaryDir dir;
    QSettings settings(dir.filePath(QStringLiteral("rookery.ini")), QSettings::IniFormat);
    ui::applyTheme(ui::Theme::Light);
    bool ok = true;

    // The consent screen, as a first run shows it.
    {
        ui::ConsentDialog consent(ui::defaultGovernorSettings());
        consent.show();
        settle(300);
        ok &= save(&consent, out + QStringLiteral("/consent.png"));
    }

    settings.setValue(QStringLiteral("consent/given"), true);
    settings.setValue(QStringLiteral("consent/version"), 1);
    ui::DesktopOptions options;
    options.simulation = simulate;
    options.trayAvailable = false;
    ui::JoinChoice demo;
    demo.nodes = simulate ? 9 : 4;
    options.startWith = demo;
    std::shared_ptr<host::EngineApi> engine;
    if (simulate) {
        engine = std::make_shared<ui::SimulatedEngine>();
    } else {
        host::NodeEngineSettings s = host::defaultNodeEngineSettings();
        s.dataDir = dir.filePath(QStringLiteral("data")).toStdString(); // a first start
        s.binDir = (QApplication::applicationDirPath() + QStringLiteral("/../../app")).toStdString();
        engine = std::make_shared<host::NodeEngine>(s);
    }
    ui::DesktopController controller(engine, settings, options);
    controller.start();
    ui::MainWindow *w = controller.window();
    w->resize(1280, 800);
    settle(seconds * 1000);

    ok &= save(w, out + QStringLiteral("/main-light.png"));
    controller.openSettings();
    settle(300);
    ok &= save(controller.settingsDialog(), out + QStringLiteral("/settings.png"));
    controller.settingsDialog()->reject();

    controller.setTheme(ui::Theme::Dark);
    settle(1500);
    ok &= save(w, out + QStringLiteral("/main-dark.png"));
    return ok ? 0 : 1;
}
