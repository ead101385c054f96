// SPDX-License-Identifier: GPL-3.0-or-later
// The run's window cap (the job file's `max_window`) reaches the nodes: a 2-stage
// pipeline of two node processes on loopback, every link behind the WAN emulation at a
// 50 ms round trip, once with the reference MLP job's cap of 3 and once with the job's
// cap set to 0 (the nodes' own default, 5). Over 50 ms the root grows its window past
// stages + 1 = 3 when it may, so the uncapped run shows that the cap is what holds it.
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/integration/swarm_run.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;
using test::SwarmRun;

namespace {

// The reference MLP job with `max_window` set, written to `path`.
void writeJob(const std::filesystem::path &path, int maxWindow)
{
    std::ifstream in(std::filesystem::path(ROOKERY_JOBS_DIR) / "mlp.json");
    nlohmann::json job = nlohmann::json::parse(in);
    job["max_window"] = maxWindow;
    std::ofstream(path) << job.dump(2);
}

// The largest window the root printed in its progress lines; 0: none printed.
int largestWindow(const QString &output)
{
    static const QRegularExpression re(QStringLiteral("\\] step \\d+/\\d+ .* window (\\d+), staleness"));
    int largest = 0;
    auto it = re.globalMatch(output);
    while (it.hasNext())
        largest = std::max(largest, it.next().captured(1).toInt());
    return largest;
}

// A 1x2 run of `steps` with the job at `jobPath`, every link 25 ms each way; its output.
QString runPipeline(const QString &name, const std::filesystem::path &work, const std::filesystem::path &jobPath)
{
    SwarmRun run(QString::fromStdString((work / (name.toStdString() + ".log")).string()));
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("ROOKERY_WAN_EMULATION"), QStringLiteral("delay_ms=25,rate_mbit=50"));
    run.process.setProcessEnvironment(env);
    run.process.setProcessChannelMode(QProcess::MergedChannels);
    run.clock.start();
    run.process.start(test::programPath(QStringLiteral("rookery-local-swarm")),
                      {QStringLiteral("--nodes"), QStringLiteral("2"), QStringLiteral("--cluster-size"),
                       QStringLiteral("2"), QStringLiteral("--job"), QString::fromStdString(jobPath.string()),
                       QStringLiteral("--steps"), QStringLiteral("300"), QStringLiteral("--eval-every"),
                       QStringLiteral("0"), QStringLiteral("--work-dir"),
                       QString::fromStdString((work / name.toStdString()).string()), QStringLiteral("--dataset-dir"),
                       QString::fromStdString(test::fashionMnistDir().string())});
    if (!run.process.waitForStarted())
        return {};
    run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 240s);
    run.read();
    if (run.process.state() != QProcess::NotRunning || run.process.exitCode() != 0)
        qWarning("%s: %s", qPrintable(name), qPrintable(run.events()));
    return run.output;
}

} // namespace

class TestSwarmWindow : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void theRunsCapHoldsTheRootsWindow()
    {
        QTemporaryDir dir;
        const std::filesystem::path work = dir.path().toStdString();
        writeJob(work / "capped.json", 3);
        writeJob(work / "default.json", 0);

        const QString capped = runPipeline(QStringLiteral("capped"), work, work / "capped.json");
        QVERIFY2(capped.contains(QLatin1String("left the swarm: the run is complete")), qPrintable(capped.right(3000)));
        QCOMPARE(largestWindow(capped), 3);

        // The nodes' own cap: over 50 ms the root keeps more than 3 in flight.
        const QString open = runPipeline(QStringLiteral("default"), work, work / "default.json");
        QVERIFY2(open.contains(QLatin1String("left the swarm: the run is complete")), qPrintable(open.right(3000)));
        const int window = largestWindow(open);
        QVERIFY2(window > 3 && window <= 5, qPrintable(QStringLiteral("window %1").arg(window)));
    }
};

QTEST_GUILESS_MAIN(TestSwarmWindow)
#include "tst_swarm_window.moc"
