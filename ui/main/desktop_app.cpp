// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main/desktop_app.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <sys/socket.h>
#include <unistd.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QSettings>
#include <QSocketNotifier>

#include "engine/common/version.h"
#include "ui/main/desktop_controller.h"
#include "ui/sim/simulated_engine.h"
#include "ui/theme/icons.h"

namespace rookery::ui {
namespace {

int g_signalFds[2] = {-1, -1};

void onSignal(int)
{
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(g_signalFds[0], &byte, 1);
}

/// SIGTERM (logout, systemd) and SIGINT quit like the Quit menu: checkpoint first. The
/// handler only writes a byte; the event loop reads it (the self-pipe trick).
void quitOnSignals(DesktopController *controller)
{
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, g_signalFds) != 0)
        return;
    auto *notifier = new QSocketNotifier(g_signalFds[1], QSocketNotifier::Read, controller);
    QObject::connect(notifier, &QSocketNotifier::activated, controller, [controller] {
        char byte;
        [[maybe_unused]] const auto n = ::read(g_signalFds[1], &byte, 1);
        controller->requestQuit();
    });
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
}

struct Options
{
    DesktopOptions desktop;
    QString settingsFile;
    bool forceSimulation = false;
    QString attach; ///< a headless node's data directory or port
    QString tokenFile;
};

Options parseOptions(const QCoreApplication &app)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(QApplication::translate(
        "main", "Rookery: volunteer computing for training neural networks together. Nothing computes until you "
                "consent in the window."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption minimized(QStringLiteral("minimized"),
                                       QApplication::translate("main", "Start in the system tray."));
    const QCommandLineOption demo(QStringLiteral("demo-swarm"),
                                  QApplication::translate("main", "Start the local demo swarm (after consent)."));
    const QCommandLineOption peers(QStringLiteral("peers"),
                                   QApplication::translate("main", "Peers in the local demo swarm (2-16)."),
                                   QStringLiteral("n"), QStringLiteral("4"));
    const QCommandLineOption join(QStringLiteral("join"),
                                  QApplication::translate("main", "Join the swarm at this address (after consent)."),
                                  QStringLiteral("address"));
    const QCommandLineOption local(QStringLiteral("local"),
                                   QApplication::translate("main", "Train on this computer alone (after consent)."));
    const QCommandLineOption settings(QStringLiteral("settings"),
                                      QApplication::translate("main", "Keep the app's settings in this INI file."),
                                      QStringLiteral("file"));
    const QCommandLineOption simulate(QStringLiteral("simulate"),
                                      QApplication::translate("main", "Use the simulated engine (a demonstration)."));
    const QCommandLineOption attach(
        QStringLiteral("attach"),
        QApplication::translate("main", "Watch and steer the headless rookery-node that runs on this computer, "
                                        "instead of training in the app: the node's data directory or its "
                                        "control port."),
        QStringLiteral("node"));
    const QCommandLineOption tokenFile(
        QStringLiteral("token-file"),
        QApplication::translate("main", "With --attach: the node's control-token file (default: the one in its data "
                                        "directory, or in the default data directory for a port)."),
        QStringLiteral("file"));
    parser.addOptions({minimized, demo, peers, join, local, settings, simulate, attach, tokenFile});
    parser.process(app); // exits on --help, --version and unknown options
    if (parser.isSet(attach) &&
        (parser.isSet(join) || parser.isSet(local) || parser.isSet(demo) || parser.isSet(simulate))) {
        std::fprintf(stderr, "rookery: --attach drives a node that already runs; it does not go with --join, "
                             "--local, --demo-swarm or --simulate\n");
        std::exit(2);
    }
    if (parser.isSet(tokenFile) && !parser.isSet(attach)) {
        std::fprintf(stderr, "rookery: --token-file goes with --attach\n");
        std::exit(2);
    }

    Options o;
    o.desktop.minimized = parser.isSet(minimized);
    o.settingsFile = parser.value(settings);
    o.forceSimulation = parser.isSet(simulate);
    o.attach = parser.value(attach);
    o.tokenFile = parser.value(tokenFile);
    JoinChoice choice;
    if (parser.isSet(join)) {
        choice.kind = JoinChoice::Kind::Address;
        choice.address = parser.value(join);
    } else if (parser.isSet(local)) {
        choice.kind = JoinChoice::Kind::Local;
    }
    choice.nodes = parser.value(peers).toInt();
    if (parser.isSet(join) || parser.isSet(local) || parser.isSet(demo)) {
        if (const QString problem = choice.problem(); !problem.isEmpty()) {
            std::fprintf(stderr, "rookery: %s\n", qPrintable(problem));
            std::exit(2);
        }
        o.desktop.startWith = choice;
    }
    return o;
}

// --help and --version answer without a display (over ssh, in package checks): a
// QApplication would abort without one.
bool onlyAsksForText(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i)
        for (const char *flag : {"--help", "-h", "--help-all", "--version", "-v"})
            if (std::strcmp(argv[i], flag) == 0)
                return true;
    return false;
}

} // namespace

int runDesktopApp(int argc, char **argv, const EngineFactory &factory, const AttachFactory &attach)
{
    if (onlyAsksForText(argc, argv)) {
        QCoreApplication app(argc, argv);
        QCoreApplication::setApplicationName(QStringLiteral("rookery"));
        QCoreApplication::setApplicationVersion(QString::fromLatin1(kVersion));
        parseOptions(app); // prints and exits
        return 0;
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("rookery"));
    QApplication::setApplicationDisplayName(QStringLiteral("Rookery"));
    QApplication::setOrganizationName(QStringLiteral("Rookery"));
    QApplication::setApplicationVersion(QString::fromLatin1(kVersion));
    QApplication::setDesktopFileName(QStringLiteral("rookery"));
    QApplication::setQuitOnLastWindowClosed(false); // the tray keeps the app alive
    QApplication::setWindowIcon(appIcon());
    Options options = parseOptions(app);

    std::shared_ptr<host::EngineApi> engine;
    if (!options.attach.isEmpty()) {
        try {
            if (!attach)
                throw std::runtime_error("this build cannot attach to a headless node");
            engine = attach(options.attach.toStdString(), options.tokenFile.toStdString());
        } catch (const std::exception &e) {
            std::fprintf(stderr, "rookery: --attach: %s\n", e.what());
            return 2;
        }
        options.desktop.attachedTo = options.attach;
    } else if (!options.forceSimulation && factory) {
        engine = factory();
    }
    options.desktop.simulation = engine == nullptr;
    if (!engine) {
        std::fprintf(stderr, options.forceSimulation
                                 ? "rookery: --simulate: the simulated engine; its figures are invented\n"
                                 : "rookery: no training engine is built in; running the simulation\n");
        engine = std::make_shared<SimulatedEngine>();
    }
    std::unique_ptr<QSettings> settings = options.settingsFile.isEmpty()
                                              ? std::make_unique<QSettings>()
                                              : std::make_unique<QSettings>(options.settingsFile, QSettings::IniFormat);
    applyTheme(loadTheme(*settings));

    DesktopController controller(std::move(engine), *settings, options.desktop);
    QObject::connect(&controller, &DesktopController::quitFinished, &app, &QApplication::quit, Qt::QueuedConnection);
    quitOnSignals(&controller);
    controller.start();
    return QApplication::exec();
}

} // namespace rookery::ui
