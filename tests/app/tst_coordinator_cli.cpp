// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-coordinator's command line (app/coordinator/coordinator_cli.h), parsed in process.
#include <QtTest>

#include "app/coordinator/coordinator_cli.h"
#include "engine/common/paths.h"
#include "tests/app/command_line_harness.h"

using rookery::app::CoordinatorOptions;
using rookery::test::ParseResult;

namespace {

ParseResult parse(std::vector<std::string> args, CoordinatorOptions *options = nullptr)
{
    CoordinatorOptions local;
    CoordinatorOptions &o = options ? *options : local;
    return rookery::test::parseWords("rookery-coordinator", std::move(args), [&o](int argc, char **argv) {
        return rookery::app::parseCoordinatorOptions(argc, argv, o);
    });
}

std::vector<std::string> words(const QStringList &args)
{
    std::vector<std::string> w;
    for (const auto &a : args)
        w.push_back(a.toStdString());
    return w;
}

} // namespace

class TestCoordinatorCli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void defaultsWhenNothingIsGiven()
    {
        CoordinatorOptions o;
        const auto r = parse({}, &o);
        QVERIFY2(r.run, r.error.c_str());
        const auto &s = o.settings;
        QCOMPARE(s.port, uint16_t(7400));
        QCOMPARE(s.statusPort, uint16_t(7401));
        QCOMPARE(s.heartbeatInterval, std::chrono::milliseconds(1000));
        QCOMPARE(s.heartbeatTimeout, std::chrono::milliseconds(5000));
        QCOMPARE(s.heartbeatBudget, 2000.0);
        QCOMPARE(s.dataDir, rookery::defaultDataDir() / "coordinator");
        QCOMPARE(s.run.model.name, std::string("mlp"));
        QCOMPARE(s.run.optimizer.kind, rookery::train::OptimizerKind::Sgd);
        QCOMPARE(s.run.seed, uint64_t(1));
        QCOMPARE(s.maxNodes, size_t(10'000));
        QVERIFY(s.bindAddress.empty()); // every interface, IPv4 and IPv6
        QCOMPARE(s.reachabilityTimeout, std::chrono::milliseconds(20'000));
        QVERIFY(!o.quiet && !o.invite);
        // Safe by default: invites, and limits per source address.
        QVERIFY(s.admission == rookery::coord::Admission::InviteOnly);
        QVERIFY(s.addressLimits.maxNodesPerAddress > 0 && s.addressLimits.registrationsPerMinute > 0);
        QVERIFY(s.maxLinksPerAddress > 0);
    }

    void admissionIsChosenOnTheCommandLine()
    {
        CoordinatorOptions o;
        const auto r = parse({"--open", "--max-nodes-per-address", "0", "--registrations-per-minute", "120",
                              "--max-links-per-address", "500"},
                             &o);
        QVERIFY2(r.run, r.error.c_str());
        QVERIFY(o.settings.admission == rookery::coord::Admission::Open);
        QCOMPARE(o.settings.addressLimits.maxNodesPerAddress, size_t(0));
        QCOMPARE(o.settings.addressLimits.registrationsPerMinute, 120.0);
        QCOMPARE(o.settings.maxLinksPerAddress, size_t(500));
        const auto bad = parse({"--registrations-per-minute", "-1"});
        QVERIFY(!bad.run);
        QVERIFY2(bad.error.find("--registrations-per-minute") != std::string::npos, bad.error.c_str());
    }

    // `invite` is a mode: it reads the running coordinator's data directory.
    void inviteIsAModeWithItsDirectory()
    {
        CoordinatorOptions o;
        const auto r = parse({"invite", "--data-dir", "/srv/rookery", "--public-host", "swarm.example.org"}, &o);
        QVERIFY2(r.run, r.error.c_str());
        QVERIFY(o.invite);
        QCOMPARE(o.settings.dataDir, std::filesystem::path("/srv/rookery"));
        QCOMPARE(o.settings.publicHost, std::string("swarm.example.org"));
        QCOMPARE(o.inviteUses, int64_t(1)); // one volunteer, for a week, unless told
        QCOMPARE(o.inviteDays, int64_t(7));
        CoordinatorOptions lab;
        QVERIFY(parse({"invite", "--uses", "30", "--valid-days", "2", "--note", "the lab"}, &lab).run);
        QCOMPARE(lab.inviteUses, int64_t(30));
        QCOMPARE(lab.inviteDays, int64_t(2));
        QCOMPARE(lab.inviteNote, std::string("the lab"));
        QVERIFY(!parse({"invite", "--uses", "0"}).run);
        CoordinatorOptions notInvite;
        QVERIFY(parse({"--reachability-timeout", "0"}, &notInvite).run);
        QVERIFY(!notInvite.invite);
        QCOMPARE(notInvite.settings.reachabilityTimeout, std::chrono::milliseconds(0));
        QVERIFY(!parse({"--data-dir", "x", "invite"}).run); // only as the first word
    }

    void readsEveryKindOfOption()
    {
        CoordinatorOptions o;
        const auto r = parse({"--port",
                              "0",
                              "--status-port=0",
                              "--bind",
                              "127.0.0.1",
                              "--heartbeat-ms",
                              "100",
                              "--heartbeat-timeout-ms",
                              "2000",
                              "--heartbeat-budget",
                              "0",
                              "--first-plan-delay-ms",
                              "0",
                              "--model",
                              "cnn",
                              "--optimizer",
                              "adamw",
                              "--lr",
                              "0.001",
                              "--momentum",
                              "0.5",
                              "--steps",
                              "20000",
                              "--seed",
                              "9",
                              "--max-nodes",
                              "5",
                              "--expect-nodes",
                              "3",
                              "--quiet"},
                             &o);
        QVERIFY2(r.run, r.error.c_str());
        const auto &s = o.settings;
        QCOMPARE(s.port, uint16_t(0));
        QCOMPARE(s.statusPort, uint16_t(0));
        QCOMPARE(s.bindAddress, std::string("127.0.0.1"));
        QCOMPARE(s.heartbeatInterval, std::chrono::milliseconds(100));
        QCOMPARE(s.heartbeatTimeout, std::chrono::milliseconds(2000));
        QCOMPARE(s.heartbeatBudget, 0.0);
        QCOMPARE(s.firstPlanDelay, std::chrono::milliseconds(0));
        QCOMPARE(s.run.model.name, std::string("cnn"));
        QCOMPARE(s.run.optimizer.kind, rookery::train::OptimizerKind::AdamW);
        QCOMPARE(s.run.optimizer.learningRate, 0.001);
        QCOMPARE(s.run.optimizer.momentum, 0.9); // SGD's momentum does not apply to AdamW
        QCOMPARE(s.run.totalSteps, int64_t(20000));
        QCOMPARE(s.run.seed, uint64_t(9));
        QCOMPARE(s.maxNodes, size_t(5));
        QCOMPARE(s.expectNodes, 3);
        QVERIFY(o.quiet);
    }

    void helpAndVersionPrintAndStop()
    {
        auto r = parse({"--help"});
        QVERIFY(!r.run && r.error.empty());
        QVERIFY(r.printed.rfind("Usage: rookery-coordinator [options]\n\nWhere a Rookery swarm meets", 0) == 0);
        QVERIFY(r.printed.find("  --averaging-interval N ") != std::string::npos);
        QVERIFY(r.printed.find("  --heartbeat-ms MS ") != std::string::npos);
        QVERIFY(r.printed.find("(default: 7400)") != std::string::npos);
        QVERIFY(r.printed.find("Exit status: 0 stopped, 1 error, 2 bad command line.\n") != std::string::npos);
        r = parse({"--version"});
        QVERIFY(!r.run && r.error.empty());
        QVERIFY(r.printed.rfind("rookery-coordinator ", 0) == 0);
    }

    // --job: the run comes from the file, run options given as well override it, and a
    // bad file is refused with every problem named before anything starts.
    void aJobFileSetsTheRunAndFlagsOverrideIt()
    {
        const std::string cnn = std::string(ROOKERY_JOBS_DIR) + "/cnn.json";
        CoordinatorOptions o;
        QVERIFY(parse({"--job", cnn}, &o).run);
        QCOMPARE(o.jobName, std::string("fashion-mnist-cnn"));
        QCOMPARE(o.settings.run.model.name, std::string("cnn"));
        QCOMPARE(o.settings.run.model.layers.size(), size_t(10));
        QCOMPARE(o.settings.run.totalSteps, int64_t(20000));
        QCOMPARE(o.settings.run.optimizer.kind, rookery::train::OptimizerKind::AdamW);
        QCOMPARE(o.settings.run.optimizer.learningRate, 0.001);
        QVERIFY(!o.jobNotes.empty());
        CoordinatorOptions overridden;
        QVERIFY(parse({"--job=" + cnn, "--steps", "50", "--lr", "0.002", "--model", "mlp"}, &overridden).run);
        QCOMPARE(overridden.settings.run.totalSteps, int64_t(50));
        QCOMPARE(overridden.settings.run.optimizer.learningRate, 0.002);
        QCOMPARE(overridden.settings.run.model.name, std::string("mlp"));
        QCOMPARE(overridden.settings.run.optimizer.kind, rookery::train::OptimizerKind::AdamW); // the job's
        QTemporaryDir dir;
        const std::string bad = dir.filePath(QStringLiteral("bad.json")).toStdString();
        {
            QFile f(QString::fromStdString(bad));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(R"({"rookery_job": 1, "name": "bad", "steps": 0, "model": {"zoo": "gpt"}})");
        }
        const auto r = parse({"--job", bad});
        QVERIFY(!r.run);
        QVERIFY2(r.error.find(bad + ": steps: must be from 1 to") != std::string::npos, r.error.c_str());
        QVERIFY2(r.error.find(bad + ": model.zoo: unknown model 'gpt'") != std::string::npos, r.error.c_str());
        const auto missing = parse({"--job", "/nonexistent/job.json"});
        QVERIFY2(missing.error.find("cannot read the job file /nonexistent/job.json") != std::string::npos,
                 missing.error.c_str());
    }

    void badCommandLinesAreRefusedByName_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("port") << QStringList{"--port", "70000"} << "--port: 70000 is out of range (0 to 65535)";
        QTest::newRow("heartbeat") << QStringList{"--heartbeat-ms", "10"}
                                   << "--heartbeat-ms: 10 is out of range (50 to 60000)";
        QTest::newRow("timeout not longer") << QStringList{"--heartbeat-ms", "1000", "--heartbeat-timeout-ms", "500"}
                                            << "--heartbeat-timeout-ms must be longer than --heartbeat-ms";
        QTest::newRow("max nodes") << QStringList{"--max-nodes", "0"}
                                   << "--max-nodes: 0 is out of range (1 to 1000000)";
        QTest::newRow("cluster size") << QStringList{"--cluster-size", "65"}
                                      << "--cluster-size: 65 is out of range (0 to 64)";
        QTest::newRow("lr") << QStringList{"--lr", "0"} << "--lr: 0 is out of range (1e-06 to 10)";
        QTest::newRow("model") << QStringList{"--model", "gpt"} << "--model: 'gpt' is not one of mlp|cnn";
        QTest::newRow("optimizer") << QStringList{"--optimizer", "adam"}
                                   << "--optimizer: 'adam' is not one of sgd|adamw";
        QTest::newRow("missing value") << QStringList{"--port"} << "--port needs a value (N)";
        QTest::newRow("unknown") << QStringList{"--frobnicate"}
                                 << "unknown option '--frobnicate' (try rookery-coordinator --help)";
    }

    void badCommandLinesAreRefusedByName()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const auto r = parse(words(args));
        QVERIFY(!r.run);
        QCOMPARE(QString::fromStdString(r.error), message);
    }
};

QTEST_APPLESS_MAIN(TestCoordinatorCli)
#include "tst_coordinator_cli.moc"
