// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-coordinator as a process: its command line, the address it prints, a node
// registering with it, a clean stop on SIGTERM, and a restart that the node survives.
#include <QTemporaryDir>
#include <QtTest>

#include "tests/engine/coord/coord_test_support.h"
#include "tests/support/coordinator_process.h"

using namespace rookery;
using namespace std::chrono_literals;

namespace {

// Short timeouts, as a test wants them.
const QStringList kTestTimings{QStringLiteral("--status-port"),          QStringLiteral("0"),
                               QStringLiteral("--heartbeat-ms"),         QStringLiteral("100"),
                               QStringLiteral("--heartbeat-timeout-ms"), QStringLiteral("2000"),
                               QStringLiteral("--first-plan-delay-ms"),  QStringLiteral("0")};

} // namespace

class TestCoordinatorProcess : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void commandLine_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("says");
        QTest::newRow("help") << QStringList{QStringLiteral("--help")} << 0 << "--averaging-interval";
        QTest::newRow("version") << QStringList{QStringLiteral("--version")} << 0 << "rookery-coordinator";
        QTest::newRow("unknown option") << QStringList{QStringLiteral("--frobnicate")} << 2 << "frobnicate";
        QTest::newRow("unknown model") << QStringList{QStringLiteral("--model"), QStringLiteral("gpt")} << 2 << "gpt";
        QTest::newRow("timeout below the interval")
            << QStringList{QStringLiteral("--heartbeat-ms"), QStringLiteral("1000"),
                           QStringLiteral("--heartbeat-timeout-ms"), QStringLiteral("500")}
            << 2 << "--heartbeat-timeout-ms";
    }

    void commandLine()
    {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, says);
        QString out, err;
        QCOMPARE(test::runProgram(test::programPath(QStringLiteral("rookery-coordinator")), args, &out, &err, 30s),
                 exitCode);
        QVERIFY2((out + err).contains(says), qPrintable(out + err));
    }

    // An operator adds a dataset with one command: it prints the content hash a job file
    // names, the same for the same data, and `dataset list` shows it; missing files are a
    // command-line error, a damaged file a clear one.
    void anOperatorAddsADataset()
    {
        QTemporaryDir dir;
        const QString dataDir = dir.filePath(QStringLiteral("coord"));
        const QString program = test::programPath(QStringLiteral("rookery-coordinator"));
        const QString source = QString::fromStdString(test::fashionMnistDir().string());
        QString out, err;
        QCOMPARE(test::runProgram(program,
                                  {QStringLiteral("dataset"), QStringLiteral("add"), QStringLiteral("clothes"),
                                   QStringLiteral("--idx-dir"), source, QStringLiteral("--data-dir"), dataDir},
                                  &out, &err, 60s),
                 0);
        const QString hash = out.trimmed();
        QVERIFY2(hash.size() == 64, qPrintable(out + err));
        QVERIFY2(err.contains(QStringLiteral("60000 training and 10000 test samples of 28x28, 10 classes")),
                 qPrintable(err));
        QCOMPARE(test::runProgram(program,
                                  {QStringLiteral("dataset"), QStringLiteral("add"), QStringLiteral("clothes"),
                                   QStringLiteral("--idx-dir"), source, QStringLiteral("--data-dir"), dataDir},
                                  &out, &err, 60s),
                 0);
        QCOMPARE(out.trimmed(), hash);
        QCOMPARE(
            test::runProgram(program,
                             {QStringLiteral("dataset"), QStringLiteral("list"), QStringLiteral("--data-dir"), dataDir},
                             &out, &err, 30s),
            0);
        QVERIFY2(out.contains(QStringLiteral("clothes  ") + hash), qPrintable(out));
        QCOMPARE(test::runProgram(program,
                                  {QStringLiteral("dataset"), QStringLiteral("add"), QStringLiteral("clothes"),
                                   QStringLiteral("--data-dir"), dataDir},
                                  &out, &err, 30s),
                 2);
        QVERIFY2(err.contains(QStringLiteral("give --idx-dir")), qPrintable(err));
        QCOMPARE(test::runProgram(program,
                                  {QStringLiteral("dataset"), QStringLiteral("add"), QStringLiteral("clothes"),
                                   QStringLiteral("--idx-dir"), dir.filePath(QStringLiteral("none")),
                                   QStringLiteral("--data-dir"), dataDir},
                                  &out, &err, 30s),
                 1);
        QVERIFY2(err.contains(QStringLiteral("train-images-idx3-ubyte.gz")), qPrintable(err));
    }

    // Invite-only, as it runs by default: `invite` makes the join string a volunteer
    // pastes; the node survives a restart, and the invite's use count does too.
    void nodeSurvivesARestart()
    {
        QTemporaryDir dir;
        const QString dataDir = dir.filePath(QStringLiteral("coord"));
        auto first = std::make_unique<test::CoordinatorProcess>(dataDir, 0, kTestTimings);
        QVERIFY2(!first->address().isEmpty(), qPrintable(first->output()));
        QVERIFY2(first->output().contains(QStringLiteral("admission: by invite")), qPrintable(first->output()));
        const auto bare = net::CoordinatorAddress::parse(first->address().toStdString());
        QCOMPARE(bare.sha256.size(), size_t(64));
        QString out, err;
        QCOMPARE(
            test::runProgram(test::programPath(QStringLiteral("rookery-coordinator")),
                             {QStringLiteral("invite"), QStringLiteral("--data-dir"), dataDir, QStringLiteral("--uses"),
                              QStringLiteral("1"), QStringLiteral("--note"), QStringLiteral("test node")},
                             &out, &err, 30s),
            0);
        QVERIFY2(err.contains(QStringLiteral("an invite for 1 new volunteer")), qPrintable(err));
        const auto address = net::CoordinatorAddress::parse(out.trimmed().toStdString());
        QCOMPARE(address.sha256, bare.sha256);
        QVERIFY(!address.invite.empty());

        net::NetContext ctx(1);
        test::TestNode stranger; // the address without the invite
        stranger.start(ctx, bare, 50, uint64_t(test::mlpDemandBytes()) * 2);
        QVERIFY(test::eventually([&] { return !stranger.lastError().empty(); }));
        QVERIFY2(stranger.lastError().find("invite-only") != std::string::npos, stranger.lastError().c_str());

        test::TestNode node;
        node.start(ctx, address, 50, uint64_t(test::mlpDemandBytes()) * 2);
        QVERIFY(test::eventually([&] { return node.training(); }));
        const auto assignment = node.assignment();

        QCOMPARE(first->terminate(), 0);
        QVERIFY2(first->output().contains(QStringLiteral("stopped")), qPrintable(first->output()));
        QVERIFY(test::eventually([&] { return node.disconnectCount() >= 1; }));

        test::CoordinatorProcess second(dataDir, address.port, kTestTimings);
        QCOMPARE(second.address(), first->address()); // the same certificate, so the same pin
        QVERIFY(test::eventually([&] { return node.registrationCount() >= 2; }));
        QCOMPARE(node.client->registration()->assignment, assignment);
        // The invite was used once, before the restart: it admits nobody new now.
        test::TestNode newcomer;
        newcomer.start(ctx, address, 50, uint64_t(test::mlpDemandBytes()) * 2);
        QVERIFY(test::eventually([&] { return !newcomer.lastError().empty(); }));
        QVERIFY2(newcomer.lastError().find("used up") != std::string::npos, newcomer.lastError().c_str());
        QCOMPARE(test::runProgram(
                     test::programPath(QStringLiteral("rookery-coordinator")),
                     {QStringLiteral("invite"), QStringLiteral("--data-dir"), dataDir, QStringLiteral("--list")}, &out,
                     &err, 30s),
                 0);
        QVERIFY2(out.contains(QStringLiteral("0 of 1 uses left")) && out.contains(QStringLiteral("test node")),
                 qPrintable(out));
        node.client->stop();
        QCOMPARE(second.terminate(), 0);
    }
};

QTEST_GUILESS_MAIN(TestCoordinatorProcess)
#include "tst_coordinator_process.moc"
