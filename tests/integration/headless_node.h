// SPDX-License-Identifier: GPL-3.0-or-later
// A real rookery-node process training on this machine with its control API, for the
// length of a test: what a volunteer runs as a service.
#pragma once

#include <filesystem>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/control/control_files.h"
#include "tests/support/test_support.h"

namespace rookery::test {

class HeadlessNode
{
public:
    /// Starts it: the MLP on 6,400 samples, one thread at half a core, a checkpoint every
    /// 100 steps, steps enough never to finish, so it runs until stopped.
    HeadlessNode()
    {
        m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_process.start(programPath(QStringLiteral("rookery-node")),
                        {QStringLiteral("--data-dir"), m_dir.path(), QStringLiteral("--dataset-dir"),
                         QString::fromStdString(fashionMnistDir().string()), QStringLiteral("--threads"),
                         QStringLiteral("1"), QStringLiteral("--cpu-percent"), QStringLiteral("50"),
                         QStringLiteral("--steps"), QStringLiteral("100000000"), QStringLiteral("--checkpoint-every"),
                         QStringLiteral("100"), QStringLiteral("--eval-every"), QStringLiteral("0"),
                         QStringLiteral("--train-samples"), QStringLiteral("6400"), QStringLiteral("--quiet")});
    }

    ~HeadlessNode()
    {
        if (m_process.state() == QProcess::NotRunning)
            return;
        m_process.terminate(); // checkpoints, then exits
        if (!m_process.waitForFinished(30000)) {
            m_process.kill();
            m_process.waitForFinished();
        }
    }

    /// Until its port and token files are there (it has loaded the data set and listens).
    bool waitUntilServing(std::chrono::milliseconds timeout = std::chrono::seconds(90))
    {
        return waitFor(
                   [this] {
                       return m_process.state() == QProcess::NotRunning ||
                              std::filesystem::exists(dataDir() / control::kPortFileName);
                   },
                   timeout) &&
               m_process.state() != QProcess::NotRunning;
    }

    std::filesystem::path dataDir() const { return m_dir.path().toStdString(); }
    control::ControlEndpoint endpoint() const { return control::readControlEndpoint(dataDir()); }
    QProcess &process() { return m_process; }

private:
    QTemporaryDir m_dir;
    QProcess m_process;
};

} // namespace rookery::test
