// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-coordinator as a child process on loopback, for integration tests: started,
// its address read from its output, stopped with SIGTERM. Its output goes to a file
// (DATA_DIR.log), never to a pipe that a busy test would leave unread: a full pipe blocks
// the coordinator's logging, and with it the coordinator. Header-only.
#pragma once

#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <signal.h>

#include "tests/support/test_support.h"

namespace rookery::test {

class CoordinatorProcess
{
public:
    /// Starts it on 127.0.0.1:`port` (0: any) with `dataDir` and the `extra` options, and
    /// waits (30 s at most) for its address.
    CoordinatorProcess(const QString &dataDir, uint16_t port, const QStringList &extra = {})
    {
        m_process.setProcessChannelMode(QProcess::MergedChannels);
        m_process.setStandardOutputFile(m_logPath = dataDir + QStringLiteral(".log"));
        m_process.start(programPath(QStringLiteral("rookery-coordinator")),
                        QStringList{QStringLiteral("--data-dir"), dataDir, QStringLiteral("--bind"),
                                    QStringLiteral("127.0.0.1"), QStringLiteral("--port"), QString::number(port),
                                    QStringLiteral("--relay-port"), QStringLiteral("0")} +
                            extra);
        waitFor(
            [&] {
                readOutput(100);
                return m_output.contains(QStringLiteral("address: ")) || m_process.state() == QProcess::NotRunning;
            },
            std::chrono::seconds(30));
        const auto at = m_output.indexOf(QStringLiteral("address: "));
        if (at >= 0)
            m_address = m_output.mid(at + 9, m_output.indexOf(QLatin1Char('\n'), at) - at - 9).trimmed();
    }

    ~CoordinatorProcess()
    {
        if (m_process.state() != QProcess::NotRunning) {
            m_process.kill();
            m_process.waitForFinished(5000);
        }
    }

    QString address() const { return m_address; }
    /// Everything it printed so far (reads what is pending, waiting up to `waitMs`).
    QString output(int waitMs = 0)
    {
        readOutput(waitMs);
        return m_output;
    }
    qint64 pid() const { return m_process.processId(); }

    /// SIGTERM, then the exit code (-1 when it did not exit by itself).
    int terminate()
    {
        ::kill(pid_t(m_process.processId()), SIGTERM);
        if (!m_process.waitForFinished(20000))
            return -1;
        readOutput(0);
        return m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
    }

private:
    void readOutput(int waitMs)
    {
        if (waitMs > 0)
            m_process.waitForFinished(waitMs); // a pause that ends early if it exits
        QFile log(m_logPath);
        if (log.open(QIODevice::ReadOnly))
            m_output = QString::fromLocal8Bit(log.readAll());
    }

    QProcess m_process;
    QString m_logPath;
    QString m_output;
    QString m_address;
};

} // namespace rookery::test
