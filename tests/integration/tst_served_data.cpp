// SPDX-License-Identifier: GPL-3.0-or-later
// Issue 18, data served by the swarm: a root without a copy of the dataset fetches its
// shards from the coordinator and the swarm trains the residual CNN of its job file to
// 85%; a shard damaged on the coordinator's disk is refused by the node, naming it and
// the hash it should have, and nothing of it is kept. Real programs, on loopback.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/common/secret_token.h"
#include "engine/coord/coordinator.h"
#include "engine/data/dataset_manifest.h"
#include "engine/data/shard_store.h"
#include "tests/integration/swarm_run.h"
#include "tests/support/coordinator_process.h"

using namespace rookery;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string readFile(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Files of a node's cache of fetched shards: each must hash to its name.
std::vector<fs::path> cachedFiles(const fs::path &nodeDir)
{
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(nodeDir / "data-cache", ec))
        out.push_back(e.path());
    return out;
}

} // namespace

class TestServedData : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // Nodes 1-3 have no copy of Fashion-MNIST, node 4 has one: at least one of the two
    // roots fetches half the training shards; the other stages need no data at all.
    void aRootWithoutDataTrainsTheResidualCnnTo85()
    {
        QTemporaryDir dir;
        test::SwarmRun run(dir.filePath(QStringLiteral("swarm.log")));
        const QString job = QStringLiteral(ROOKERY_JOBS_DIR "/rescnn.json");
        QVERIFY(run.start(dir.path(), true,
                          {QStringLiteral("--job"), job, QStringLiteral("--steps"), QStringLiteral("240"),
                           QStringLiteral("--nodes-without-data"), QStringLiteral("3")}));
        QVERIFY2(run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 15min),
                 qPrintable(run.events()));
        QCOMPARE(run.process.exitCode(), 0);
        test::checkAccuracy(run);
        QVERIFY2(run.output.contains(QStringLiteral("reads 6 of the 12 training shards of fashion-mnist")),
                 qPrintable(run.events()));
        // What was fetched is kept under its hash, and only by nodes without a copy.
        size_t fetched = 0;
        for (int node = 1; node <= 4; ++node) {
            const auto files = cachedFiles(fs::path(dir.path().toStdString()) / ("node-" + std::to_string(node)));
            if (node == 4)
                QVERIFY2(files.empty(), "the node with its own copy fetched data");
            for (const auto &f : files) {
                QCOMPARE(QString::fromStdString(sha256Hex(readFile(f))), QString::fromStdString(f.filename().string()));
                ++fetched;
            }
        }
        QVERIFY(fetched >= 1 + 6 + 2); // the manifest, six training shards, the test shards
    }

    void aShardDamagedOnTheCoordinatorIsRefused()
    {
        QTemporaryDir dir;
        const QString coordDir = dir.filePath(QStringLiteral("coordinator"));
        test::CoordinatorProcess coordinator(
            coordDir, 0,
            {QStringLiteral("--open"), QStringLiteral("--status-port"), QStringLiteral("0"), QStringLiteral("--steps"),
             QStringLiteral("20"), QStringLiteral("--first-plan-delay-ms"), QStringLiteral("0"),
             QStringLiteral("--reachability-timeout"), QStringLiteral("0"), QStringLiteral("--dataset-dir"),
             QString::fromStdString(test::fashionMnistDir().string())});
        QVERIFY2(!coordinator.address().isEmpty(), qPrintable(coordinator.output()));
        QVERIFY2(coordinator.output().contains(QStringLiteral("serving dataset fashion-mnist")),
                 qPrintable(coordinator.output()));

        // One byte of the first training shard changes on the coordinator's disk, after
        // it started (it checked the sizes then, and does not hash what it serves).
        const auto store = coord::datasetStoreOf(coordDir.toStdString());
        const auto named = readFile(store / "names" / "fashion-mnist");
        const auto manifest = data::parseManifest(readFile(store / named.substr(0, 64)));
        const std::string damaged = manifest.train[0].sha256;
        {
            std::fstream f(store / damaged, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(5000);
            f.put('\x7f');
        }

        const QString nodeDir = dir.filePath(QStringLiteral("node"));
        QProcess node;
        node.setProcessChannelMode(QProcess::MergedChannels);
        node.start(test::programPath(QStringLiteral("rookery-node")),
                   {QStringLiteral("--join"), coordinator.address(), QStringLiteral("--data-dir"), nodeDir,
                    QStringLiteral("--dataset-dir"), dir.filePath(QStringLiteral("no-dataset")),
                    QStringLiteral("--bind"), QStringLiteral("127.0.0.1"), QStringLiteral("--threads"),
                    QStringLiteral("1"), QStringLiteral("--no-control")});
        QString output;
        const bool refused = test::waitFor(
            [&] {
                node.waitForReadyRead(100);
                output += QString::fromUtf8(node.readAll());
                return output.contains(QStringLiteral("does not match its hash"));
            },
            120s);
        node.terminate();
        node.waitForFinished(30'000);
        output += QString::fromUtf8(node.readAll());
        QVERIFY2(refused, qPrintable(output.right(3000)));
        // The error names the shard and the hash it should have.
        const auto line = output.mid(output.indexOf(QStringLiteral("does not match its hash")) - 200, 400);
        QVERIFY2(line.contains(QStringLiteral("training shard 1 of fashion-mnist")) &&
                     line.contains(QStringLiteral("expected sha256 ") + QString::fromStdString(damaged)),
                 qPrintable(line));
        // Nothing of it is kept; the manifest, which was sound, is.
        const fs::path cache = fs::path(nodeDir.toStdString()) / "data-cache";
        QVERIFY(!fs::exists(cache / damaged));
        QVERIFY(!fs::exists(cache / (damaged + ".part")));
        QVERIFY(fs::exists(cache / named.substr(0, 64)));
        QVERIFY2(!output.contains(QStringLiteral("starting stage")), qPrintable(output.right(3000)));
    }
};

QTEST_GUILESS_MAIN(TestServedData)
#include "tst_served_data.moc"
