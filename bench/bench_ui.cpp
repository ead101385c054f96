// SPDX-License-Identifier: GPL-3.0-or-later
// bench_ui: how long the desktop app's event loop stalls while the engine trains at full
// speed in the same process. A 2 ms precise timer probes the loop; a stall is how late a
// tick came. The main window runs as in the app (bridge polling every 250 ms, charts,
// peer graph, event log, the tabs switched every second as a person might); the engine
// is bench/ui/TrainingEngine: the real Trainer on Fashion-MNIST on its own thread, on
// every core. Baseline: the same probe, same window, the engine idle.
//
// Training runs twice: compute threads at normal priority, then lowered to nice 19 (what
// the product should do; the main figures). Figures: p99_ms and max_ms (training, nice
// 19), normal_priority_p99_ms and normal_priority_max_ms, baseline_p99_ms and
// baseline_max_ms (idle), ui_only_* (the window fed the same snapshots, no training),
// node_engine_* (the app's own engine, NodeEngine, on a local run at full speed).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <time.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QEvent>
#include <QEventLoop>
#include <QSettings>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>

#include "bench/support/bench_report.h"
#include "bench/ui/training_engine.h"
#include "engine/common/paths.h"
#include "engine/host/node_engine.h"
#include "ui/bridge/engine_bridge.h"
#include "ui/consent/consent_store.h"
#include "ui/join/join_dialog.h"
#include "ui/main/desktop_controller.h"
#include "ui/main/main_window.h"

using namespace rookery;

namespace {

constexpr int kProbeMs = 2;

double threadCpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

/// Times every outermost event dispatch and keeps the slowest, to say where stalls come
/// from (receiver class, event type).
class TimedApplication : public QApplication
{
public:
    using QApplication::QApplication;

    struct Slow
    {
        double ms;
        std::string what;
    };

    bool notify(QObject *receiver, QEvent *event) override
    {
        if (m_depth++ > 0) {
            const bool r = QApplication::notify(receiver, event);
            --m_depth;
            return r;
        }
        QElapsedTimer t;
        t.start();
        const double cpu0 = threadCpuMs();
        const int type = int(event->type());
        std::string cls = receiver->metaObject()->className();
        if (receiver->parent())
            cls += std::string(" in ") + receiver->parent()->metaObject()->className();
        const bool r = QApplication::notify(receiver, event);
        --m_depth;
        const double ms = double(t.nsecsElapsed()) / 1e6;
        if (ms > 4) {
            char cpu[48];
            std::snprintf(cpu, sizeof cpu, " (%.2f ms on the CPU)", threadCpuMs() - cpu0);
            m_slow.push_back({ms, cls + " event " + std::to_string(type) + cpu});
            std::sort(m_slow.begin(), m_slow.end(), [](const Slow &a, const Slow &b) { return a.ms > b.ms; });
            if (m_slow.size() > 8)
                m_slow.resize(8);
        }
        return r;
    }
    std::vector<Slow> takeSlowest() { return std::exchange(m_slow, {}); }

private:
    int m_depth = 0;
    std::vector<Slow> m_slow;
};

struct Stalls
{
    std::vector<double> ms; ///< lateness of each tick
    int snapshots = 0;
    double percentile(double p) const
    {
        if (ms.empty())
            return 0;
        std::vector<double> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        const size_t i = size_t(std::ceil(p * double(sorted.size()))) - 1;
        return sorted[std::min(i, sorted.size() - 1)];
    }
    double max() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
};

/// Runs the event loop for `seconds` with the probe and the tab-switching "user".
Stalls probe(ui::DesktopController &app, int seconds)
{
    Stalls out;
    QElapsedTimer clock;
    clock.start();
    qint64 last = clock.nsecsElapsed();
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    tick.setInterval(kProbeMs);
    QObject::connect(&tick, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        out.ms.push_back(std::max(0.0, double(now - last) / 1e6 - kProbeMs));
        last = now;
    });
    QTimer user;
    user.setInterval(1000);
    QTabWidget *tabs = app.window()->tabs();
    QObject::connect(&user, &QTimer::timeout, [tabs] { tabs->setCurrentIndex((tabs->currentIndex() + 1) % 3); });
    const auto counter = QObject::connect(app.bridge(), &ui::EngineBridge::snapshotChanged, [&] { ++out.snapshots; });
    QEventLoop loop;
    QTimer::singleShot(seconds * 1000, &loop, &QEventLoop::quit);
    last = clock.nsecsElapsed();
    tick.start();
    user.start();
    loop.exec();
    QObject::disconnect(counter);
    return out;
}

/// The app's window over an engine, consented, idle until start().
struct Session
{
    explicit Session(std::shared_ptr<host::EngineApi> engine)
        : settings(dir.filePath(QStringLiteral("rookery.ini")), QSettings::IniFormat)
    {
        ui::ConsentStore(settings).setGiven(true);
        // Full speed: the app's courteous limits (50% CPU while the user is active) off.
        settings.setValue(QStringLiteral("governor/active.cpu-percent"), QStringLiteral("100"));
        ui::DesktopOptions options;
        options.trayAvailable = false;
        options.pollMs = 250; // the busiest the app ever polls
        controller = std::make_unique<ui::DesktopController>(std::move(engine), settings, options);
        controller->start(); // consent given, no work chosen: the engine stays idle
        QApplication::processEvents();
        if (controller->joinDialog())
            controller->joinDialog()->reject();
        controller->window()->resize(1280, 800);
    }
    void start()
    {
        ui::JoinChoice local;
        local.kind = ui::JoinChoice::Kind::Local;
        controller->startChoice(local);
    }
    QTemporaryDir dir;
    QSettings settings;
    std::unique_ptr<ui::DesktopController> controller;
};

void stopAndWait(ui::DesktopController &controller)
{
    bool stopped = false;
    controller.bridge()->stopTraining([&](const QString &) { stopped = true; });
    QElapsedTimer wait;
    wait.start();
    while (!stopped && wait.elapsed() < 10'000)
        QApplication::processEvents(QEventLoop::AllEvents, 50);
}

void print(const char *what, const Stalls &s)
{
    std::printf("  %s\n    %7zu ticks, %4d snapshots: stall p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", what, s.ms.size(),
                s.snapshots, s.percentile(0.5), s.percentile(0.99), s.max());
    auto *app = static_cast<TimedApplication *>(QCoreApplication::instance());
    for (const auto &slow : app->takeSlowest())
        std::printf("            slowest dispatches: %6.2f ms  %s\n", slow.ms, slow.what.c_str());
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(argc, argv, "bench_ui",
                                               "Event-loop stalls of the desktop app while the engine trains.");
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    int qtArgc = 1;
    TimedApplication app(qtArgc, argv);
    bench::BenchReport report("bench_ui", opts.quick);
    const int seconds = opts.quick ? 10 : 60;

    auto train =
        std::make_shared<data::ImageDataset>(data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Train));
    std::printf("bench_ui: %d s per phase, probe every %d ms\n", seconds, kProbeMs);

    // The window's own work: the same snapshots and events, no training.
    const Stalls uiOnly = [&] {
        Session s(std::make_shared<bench::TrainingEngine>(train, false));
        s.start();
        probe(*s.controller, 2);
        return probe(*s.controller, opts.quick ? 5 : 20);
    }();
    print("ui only", uiOnly);

    auto engine = std::make_shared<bench::TrainingEngine>(train);
    Session session(engine);
    ui::DesktopController &controller = *session.controller;
    const Stalls idle = probe(controller, seconds);
    print("idle", idle);
    session.start();
    probe(controller, 3); // warm-up: the first steps allocate
    engine->takeSamplesPerSecond();
    const Stalls normal = probe(controller, seconds);
    const double normalRate = engine->takeSamplesPerSecond();
    print("training, compute at normal priority", normal);
    std::printf("            the engine trained at %.0f samples/s\n", normalRate);

    // The product's configuration: compute threads at nice 19, the UI thread at 0.
    const int lowered = bench::TrainingEngine::lowerOtherThreads();
    probe(controller, 2);
    engine->takeSamplesPerSecond();
    const Stalls busy = probe(controller, seconds);
    const double trainRate = engine->takeSamplesPerSecond();
    print("training, compute at nice 19", busy);
    std::printf("            the engine trained at %.0f samples/s (%d threads lowered; platform %s)\n", trainRate,
                lowered, qPrintable(QApplication::platformName()));

    report.setResult(idle.percentile(0.99), busy.percentile(0.99), "ms", "p99_ratio");
    report.add("p99_ms", busy.percentile(0.99));
    report.add("max_ms", busy.max());
    report.add("p50_ms", busy.percentile(0.5));
    report.add("baseline_p99_ms", idle.percentile(0.99));
    report.add("baseline_max_ms", idle.max());
    report.add("ui_only_p99_ms", uiOnly.percentile(0.99));
    report.add("ui_only_max_ms", uiOnly.max());
    report.add("probe_ticks", double(busy.ms.size()));
    report.add("snapshots", double(busy.snapshots));
    report.add("train_samples_per_second", trainRate);
    report.add("normal_priority_p99_ms", normal.percentile(0.99));
    report.add("normal_priority_max_ms", normal.max());
    report.add("normal_priority_train_samples_per_second", normalRate);
    report.add("threads_lowered", double(lowered));
    report.add("seconds", double(seconds));
    report.add("platform", QApplication::platformName().toStdString());

    stopAndWait(controller);

    // The product: the app's own engine (NodeEngine, a local run), which lowers its
    // compute threads by itself.
    {
        QTemporaryDir data;
        host::NodeEngineSettings s;
        s.dataDir = data.path().toStdString();
        s.datasetDir = defaultFashionMnistDir();
        s.local.steps = 100'000'000;
        s.local.checkpointEvery = 0;
        s.local.evalEvery = 0;
        auto nodeEngine = std::make_shared<host::NodeEngine>(s);
        Session product(nodeEngine);
        product.start();
        probe(*product.controller, 5); // consent measures the machine; the run loads its data
        const Stalls real = probe(*product.controller, seconds);
        const double realRate = nodeEngine->snapshot().training.samplesPerSecond;
        print("training, the app's engine (NodeEngine)", real);
        std::printf("            it trained at %.0f samples/s\n", realRate);
        report.add("node_engine_p99_ms", real.percentile(0.99));
        report.add("node_engine_max_ms", real.max());
        report.add("node_engine_train_samples_per_second", realRate);
        stopAndWait(*product.controller);
    }
    report.finish(opts.jsonPath);
    return 0;
}
