// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-local-swarm for the length of a test: a coordinator and N node processes on
// loopback, their merged output, and the final accuracies they print.
#pragma once

#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "engine/control/control_client.h"
#include "engine/control/control_files.h"
#include "engine/control/snapshot_json.h"
#include "tests/support/test_support.h"

namespace rookery::test {

// The steps every cluster trains; the unsplit model needs about 1,500 of 64 samples for
// 85%, two clusters averaging every 10 steps need fewer each.
inline const QString kSteps = QStringLiteral("1200");

// `quiet`: without the nodes' progress lines (the churn test reads them).
inline QStringList swarmArgs(const QString &workDir, bool quiet = true)
{
    QStringList args{QStringLiteral("--nodes"),
                     QStringLiteral("4"),
                     QStringLiteral("--cluster-size"),
                     QStringLiteral("2"),
                     QStringLiteral("--steps"),
                     kSteps,
                     QStringLiteral("--averaging-interval"),
                     QStringLiteral("10"),
                     QStringLiteral("--work-dir"),
                     workDir,
                     QStringLiteral("--dataset-dir"),
                     QString::fromStdString(test::fashionMnistDir().string())};
    if (quiet)
        args << QStringLiteral("--quiet");
    return args;
}

struct SwarmRun
{
    explicit SwarmRun(QString logName)
        : log(std::move(logName))
    { }
    // The whole output stays in the test's directory, to read after a failure.
    ~SwarmRun()
    {
        // A test that gave up leaves the launcher running: SIGTERM lets it stop its
        // coordinator and nodes (a SIGKILL would orphan them).
        if (process.state() != QProcess::NotRunning) {
            process.terminate();
            if (!process.waitForFinished(30'000))
                process.kill();
            read();
        }
        QFile f(log);
        if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            f.write((stamped + partial).toUtf8());
    }
    QString log;
    QProcess process;
    QString output;
    QString stamped; ///< the output, each line after the seconds since start() when it was read
    QElapsedTimer clock;
    QString partial; ///< the last line read, until its end comes
    void read()
    {
        const QString more = QString::fromUtf8(process.readAllStandardOutput());
        output += more;
        partial += more;
        for (qsizetype end; (end = partial.indexOf(QLatin1Char('\n'))) >= 0; partial.remove(0, end + 1))
            stamped += QStringLiteral("%1 ").arg(clock.elapsed() / 1000.0, 7, 'f', 1) + partial.left(end + 1);
    }
    bool start(const QString &workDir, bool quiet, const QStringList &extra = {})
    {
        clock.start();
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.start(test::programPath(QStringLiteral("rookery-local-swarm")), swarmArgs(workDir, quiet) + extra);
        return process.waitForStarted();
    }
    bool waitFor(const std::function<bool()> &condition, std::chrono::milliseconds timeout)
    {
        return test::waitFor(
            [&] {
                process.waitForReadyRead(50);
                read();
                return condition();
            },
            timeout);
    }
    // The last `chars` of the output without the lines that repeat (progress, certificate
    // renewals): what a failure message should show.
    QString events(qsizetype chars = 4000) const
    {
        QStringList kept;
        for (const auto &line : output.split(QLatin1Char('\n')))
            if (!line.contains(QLatin1String("] step ")) && !line.contains(QLatin1String("renewed its certificate")))
                kept << line;
        return kept.join(QLatin1Char('\n')).right(chars);
    }
    std::vector<double> finalAccuracies() const
    {
        std::vector<double> out;
        static const QRegularExpression re(QStringLiteral("final test accuracy, cluster \\d+: ([0-9.]+)%"));
        auto it = re.globalMatch(output);
        while (it.hasNext())
            out.push_back(it.next().captured(1).toDouble() / 100.0);
        return out;
    }
};

/// Every cluster's final test accuracy reached 85%, and `clusters` finished.
inline void checkAccuracy(const SwarmRun &run, size_t clusters = 2)
{
    const auto acc = run.finalAccuracies();
    QVERIFY2(acc.size() == clusters, qPrintable(run.output.right(3000)));
    for (double a : acc) {
        qInfo("final test accuracy %.2f%%", a * 100);
        QVERIFY2(a >= 0.85, qPrintable(run.output.right(3000)));
    }
}

/// A node's status from its control API (the files in its data directory say where and
/// with which token), or nothing while it cannot answer.
inline std::optional<host::EngineSnapshot> nodeStatus(const std::filesystem::path &nodeDir)
{
    try {
        const auto e = control::readControlEndpoint(nodeDir);
        control::ControlClient client("127.0.0.1", e.port, e.token);
        const auto reply = client.request("GET", "/v1/status");
        if (reply.status != 200)
            return std::nullopt;
        return control::snapshotFromJson(reply.body);
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

/// A node's step from its control API; a busy node may miss one request, so it is asked
/// up to 5 times. -1 when it never answered.
inline int64_t nodeStep(const std::filesystem::path &nodeDir)
{
    for (int attempt = 0; attempt < 5; ++attempt) {
        if (const auto s = nodeStatus(nodeDir))
            return s->training.step;
        QTest::qWait(200);
    }
    return -1;
}

} // namespace rookery::test
