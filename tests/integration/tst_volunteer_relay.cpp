// SPDX-License-Identifier: GPL-3.0-or-later
// A volunteer's relay carries the swarm's relayed links (issue 15): a coordinator with no
// relay of its own, three volunteers nobody can dial (they advertise 127.0.0.1:1, where
// nothing listens) and one that can be dialled and offers a relay (--serve-relay). Two
// clusters of two train the MLP to the end, and every link between two of the three
// goes through the volunteer's relay, as the coordinator's log says. Loopback only.
// ROOKERY_TEST_LOGS=1 prints the programs' output (the ends of it) when it passes too.
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

struct Program
{
    QString name;
    QProcess process;
    QString output;

    Program(const QString &n, const QString &program, const QStringList &args)
        : name(n)
    {
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.start(test::programPath(program), args);
    }
    ~Program()
    {
        if (process.state() != QProcess::NotRunning) {
            process.kill();
            process.waitForFinished(5000);
        }
    }
    void read() { output += QString::fromLocal8Bit(process.readAll()); }
    bool exitedCleanly() const
    {
        return process.state() == QProcess::NotRunning && process.exitStatus() == QProcess::NormalExit &&
               process.exitCode() == 0;
    }
};

} // namespace

class TestVolunteerRelay : public QObject
{
    Q_OBJECT

    std::vector<std::unique_ptr<Program>> m_programs;

    // Every program's whole output goes to tst_volunteer_relay-<name>.log in the working
    // directory (the build tree under ctest); the message names the ones still running
    // and ends with the last lines of each (CI shows the start of a long message only).
    QString logs()
    {
        QString running;
        QString text;
        for (auto &p : m_programs) {
            p->read();
            QFile file(QStringLiteral("tst_volunteer_relay-") + p->name + QStringLiteral(".log"));
            if (file.open(QIODevice::WriteOnly | QIODevice::Truncate))
                file.write(p->output.toLocal8Bit());
            if (p->process.state() != QProcess::NotRunning)
                running += QLatin1Char(' ') + p->name;
            const QStringList lines = p->output.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
            text += "\n--- " + p->name + " (last lines) ---\n" +
                    lines.mid(std::max<qsizetype>(0, lines.size() - 8)).join('\n');
        }
        return "still running:" + (running.isEmpty() ? QStringLiteral(" none") : running) + text;
    }
    Program &start(const QString &name, const QString &program, const QStringList &args)
    {
        m_programs.push_back(std::make_unique<Program>(name, program, args));
        return *m_programs.back();
    }

private Q_SLOTS:
    void aVolunteersRelayCarriesTheRelayedLinks()
    {
        QTemporaryDir dir;
        const QString coordinatorPort = QString::number(test::freeLoopbackPort());
        Program &coordinator = start(QStringLiteral("coordinator"), QStringLiteral("rookery-coordinator"),
                                     {"--data-dir",
                                      dir.filePath(QStringLiteral("coordinator")),
                                      "--bind",
                                      "127.0.0.1",
                                      "--port",
                                      coordinatorPort,
                                      "--status-port",
                                      "0",
                                      "--no-relay",
                                      "--open",
                                      "--max-nodes-per-address",
                                      "0",
                                      "--expect-nodes",
                                      "4",
                                      "--cluster-size",
                                      "2",
                                      "--first-plan-delay-ms",
                                      "60000",
                                      "--steps",
                                      "300",
                                      "--averaging-interval",
                                      "10",
                                      "--reachability-timeout",
                                      "3"});
        QString address;
        QVERIFY2(test::waitFor(
                     [&] {
                         coordinator.process.waitForReadyRead(100);
                         coordinator.read();
                         const auto at = coordinator.output.indexOf(QStringLiteral("address: "));
                         const auto end = coordinator.output.indexOf(QLatin1Char('\n'), at);
                         if (at < 0 || end < 0)
                             return false;
                         address = coordinator.output.mid(at + 9, end - at - 9).trimmed();
                         return true;
                     },
                     30s),
                 qPrintable(logs()));

        const QString relayPort = QString::number(test::freeLoopbackPort());
        const auto node = [&](const QString &name, const QStringList &extra) {
            start(name, QStringLiteral("rookery-node"),
                  QStringList{"--join", address, "--data-dir", dir.filePath(name), "--name", name, "--dataset-dir",
                              QString::fromStdString(test::fashionMnistDir().string()), "--bind", "127.0.0.1",
                              "--no-port-mapping", "--threads", "1", "--no-control"} +
                      extra);
        };
        // The volunteer with the relay trains too; when its run is complete it stays while
        // its relay still carries the others' links, and leaves once they have ended.
        node(QStringLiteral("relay"), {"--serve-relay", relayPort, "--relay-mbit", "400"});
        for (const char *name : {"nat-1", "nat-2", "nat-3"})
            node(QLatin1String(name), {"--public-address", "127.0.0.1:1"});

        // Each node leaves once the run is complete.
        QElapsedTimer clock;
        clock.start();
        std::vector<qint64> exitedAtMs(m_programs.size(), -1);
        QVERIFY2(test::waitFor(
                     [&] {
                         bool all = true;
                         for (size_t i = 1; i < m_programs.size(); ++i) {
                             m_programs[i]->process.waitForFinished(0);
                             if (m_programs[i]->process.state() != QProcess::NotRunning)
                                 all = false;
                             else if (exitedAtMs[i] < 0)
                                 exitedAtMs[i] = clock.elapsed();
                         }
                         return all;
                     },
                     480s),
                 qPrintable(logs()));
        for (size_t i = 1; i < m_programs.size(); ++i)
            qInfo().noquote() << m_programs[i]->name << "left after" << exitedAtMs[i] / 1000.0 << "s";
        const QString all = logs();
        for (size_t i = 1; i < m_programs.size(); ++i)
            QVERIFY2(m_programs[i]->exitedCleanly(), qPrintable(m_programs[i]->name + all));
        QVERIFY2(m_programs[1]->output.contains("running a relay for other volunteers on port " + relayPort),
                 qPrintable(all));
        int finalEvaluations = 0;
        for (size_t i = 1; i < m_programs.size(); ++i) {
            QVERIFY2(m_programs[i]->output.contains(QStringLiteral("the run is complete")), qPrintable(all));
            // The volunteer's relay stays while it carries links: the roots gather their
            // stages' final weights through it.
            QVERIFY2(!m_programs[i]->output.contains(QStringLiteral("final evaluation skipped")),
                     qPrintable(m_programs[i]->name + all));
            finalEvaluations += int(m_programs[i]->output.count(
                QRegularExpression(QStringLiteral("^done: cluster"), QRegularExpression::MultilineOption)));
        }
        QCOMPARE(finalEvaluations, 2); // one per cluster, by its root
        // Three of the four cannot be dialled: in two clusters of two, at least one
        // pipeline or ring link joins two of them, and it went through the volunteer.
        QVERIFY2(coordinator.output.contains("through 127.0.0.1:" + relayPort + " (volunteer "), qPrintable(all));
        if (qEnvironmentVariableIsSet("ROOKERY_TEST_LOGS"))
            qInfo().noquote() << all;
        qInfo() << "pairs relayed by the volunteer:"
                << coordinator.output.count("through 127.0.0.1:" + relayPort + " (volunteer ");
        for (size_t i = 1; i < m_programs.size(); ++i) {
            const auto at = m_programs[i]->output.lastIndexOf(QStringLiteral("the run is complete"));
            qInfo().noquote() << m_programs[i]->name << m_programs[i]->output.mid(at, 80).section('\n', 0, 0);
        }
    }
};

QTEST_GUILESS_MAIN(TestVolunteerRelay)
#include "tst_volunteer_relay.moc"
