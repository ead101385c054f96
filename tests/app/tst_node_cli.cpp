// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-node's command line (app/node/node_cli.h), parsed in process.
#include <QtTest>

#include "app/node/node_cli.h"
#include "engine/common/paths.h"
#include "tests/app/command_line_harness.h"

using rookery::app::NodeOptions;
using rookery::test::ParseResult;

namespace {

ParseResult parse(std::vector<std::string> args, NodeOptions *options = nullptr)
{
    NodeOptions local;
    NodeOptions &o = options ? *options : local;
    return rookery::test::parseWords("rookery-node", std::move(args), [&o](int argc, char **argv) {
        return rookery::app::parseNodeOptions(argc, argv, o);
    });
}

} // namespace

class TestNodeCli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void defaultsWhenNothingIsGiven()
    {
        NodeOptions o;
        const auto r = parse({}, &o);
        QVERIFY2(r.run, r.error.c_str());
        QVERIFY(r.printed.empty());
        const rookery::host::WholeModelSettings defaults;
        QCOMPARE(o.local.steps, defaults.steps);
        QCOMPARE(o.local.model, std::string("mlp"));
        QCOMPARE(o.local.optimizer, std::string("sgd"));
        QCOMPARE(o.local.learningRate, defaults.learningRate);
        QCOMPARE(o.local.checkpointEvery, defaults.checkpointEvery); // local mode keeps its own
        QCOMPARE(o.local.evalEvery, defaults.evalEvery);
        QCOMPARE(o.dataDir, rookery::defaultDataDir().string());
        QCOMPARE(o.local.dataDir, std::filesystem::path(o.dataDir));
        QCOMPARE(o.datasetDir, rookery::defaultFashionMnistDir().string());
        QVERIFY(o.bind.empty()); // every interface
        QVERIFY(o.publicAddress.empty());
        QCOMPARE(o.port, 0);
        QVERIFY(o.join.empty() && !o.profile && !o.quiet && !o.noControl);
        QCOMPARE(o.local.governor.whenActive.cpuPercent, int64_t(100));
        QCOMPARE(o.local.governor.whenIdle.cpuPercent, int64_t(100));
        QVERIFY(o.local.governor.pauseOnBattery);
    }

    void readsEveryKindOfOption()
    {
        NodeOptions o;
        const auto r = parse({"--steps",
                              "42",
                              "--lr=0.5",
                              "--model",
                              "cnn",
                              "--optimizer=adamw",
                              "--run",
                              "a run",
                              "--seed",
                              "7",
                              "--fresh",
                              "--quiet",
                              "--cpu-percent",
                              "50",
                              "--max-cores",
                              "2",
                              "--run-on-battery",
                              "--schedule",
                              "mon-fri 18:00-08:00",
                              "--data-dir",
                              "/tmp/x"},
                             &o);
        QVERIFY2(r.run, r.error.c_str());
        QCOMPARE(o.local.steps, int64_t(42));
        QCOMPARE(o.local.learningRate, 0.5);
        QCOMPARE(o.local.model, std::string("cnn"));
        QCOMPARE(o.local.optimizer, std::string("adamw"));
        QCOMPARE(o.local.run, std::string("a run"));
        QCOMPARE(o.local.seed, uint64_t(7));
        QVERIFY(o.local.fresh);
        QVERIFY(o.quiet);
        QCOMPARE(o.local.governor.whenActive.cpuPercent, int64_t(50));
        QCOMPARE(o.local.governor.whenIdle.cpuPercent, int64_t(50)); // follows --cpu-percent
        QCOMPARE(o.local.governor.whenActive.maxCores, int64_t(2));
        QCOMPARE(o.local.governor.whenIdle.maxCores, int64_t(2));
        QVERIFY(!o.local.governor.pauseOnBattery);
        QCOMPARE(o.local.governor.schedule, std::string("mon-fri 18:00-08:00"));
        QCOMPARE(o.local.dataDir, std::filesystem::path("/tmp/x"));
    }

    void idleCpuPercentOverridesWhenGiven()
    {
        NodeOptions o;
        QVERIFY(parse({"--cpu-percent", "50", "--idle-cpu-percent", "90"}, &o).run);
        QCOMPARE(o.local.governor.whenActive.cpuPercent, int64_t(50));
        QCOMPARE(o.local.governor.whenIdle.cpuPercent, int64_t(90));
    }

    void theLastOfARepeatedOptionWins()
    {
        NodeOptions o;
        QVERIFY(parse({"--steps", "5", "--steps", "7"}, &o).run);
        QCOMPARE(o.local.steps, int64_t(7));
    }

    void joinKeepsTheSwarmDefaultsUnlessGiven()
    {
        NodeOptions o;
        auto r = parse({"--join", "wss://10.0.0.5:7400/#sha256=ab", "--name", "n1", "--port", "7500", "--stay"}, &o);
        QVERIFY2(r.run, r.error.c_str());
        QCOMPARE(o.join, std::string("wss://10.0.0.5:7400/#sha256=ab"));
        QCOMPARE(o.name, std::string("n1"));
        QCOMPARE(o.port, 7500);
        QVERIFY(o.stay);
        QCOMPARE(o.local.checkpointEvery, int64_t(-1));
        QCOMPARE(o.local.evalEvery, int64_t(-1));
        QCOMPARE(o.checkpointSeconds, -1);
        QCOMPARE(o.peerCompression, std::string("bf16")); // the default
        QCOMPARE(o.ringCompression, std::string("int8")); // the default

        NodeOptions given;
        r = parse({"--join", "wss://h:1/#sha256=ab", "--checkpoint-every", "10", "--eval-every", "0",
                   "--checkpoint-seconds", "0", "--peer-compression", "none", "--ring-compression", "none"},
                  &given);
        QVERIFY2(r.run, r.error.c_str());
        QCOMPARE(given.local.checkpointEvery, int64_t(10));
        QCOMPARE(given.local.evalEvery, int64_t(0));
        QCOMPARE(given.checkpointSeconds, 0);
        QCOMPARE(given.peerCompression, std::string("none"));
        QCOMPARE(given.ringCompression, std::string("none"));
        NodeOptions sixteenBit;
        r = parse({"--join", "wss://h:1/#sha256=ab", "--ring-compression", "bf16"}, &sixteenBit);
        QVERIFY2(r.run, r.error.c_str());
        QCOMPARE(sixteenBit.ringCompression, std::string("bf16"));
        // A swarm setting: not without --join.
        NodeOptions local;
        r = parse({"--checkpoint-seconds", "5"}, &local);
        QVERIFY(!r.run);
        QVERIFY2(r.error.find("--checkpoint-seconds goes with --join") != std::string::npos, r.error.c_str());
    }

    void helpAndVersionPrintAndStop_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QStringList>("printed");
        QTest::newRow("--help") << QStringList{"--help"}
                                << QStringList{"Usage: rookery-node [options]\n\nRookery's headless node.",
                                               "\nOptions:\n",
                                               "  --checkpoint-every N ",
                                               "(0: only at the end) (default: 500)\n",
                                               "  --model mlp|cnn ",
                                               "  --stay ",
                                               "  -h, --help ",
                                               "\nExamples:\n",
                                               "Exit status: 0 done or stopped, 1 error, 2 bad command line.\n"};
        QTest::newRow("-h") << QStringList{"-h"} << QStringList{"Usage: rookery-node [options]"};
        // --help acts where it stands: what follows it is not checked.
        QTest::newRow("help first") << QStringList{"--help", "--steps", "abc"} << QStringList{"Usage: "};
        QTest::newRow("--version") << QStringList{"--version"} << QStringList{"rookery-node "};
    }

    void helpAndVersionPrintAndStop()
    {
        QFETCH(QStringList, args);
        QFETCH(QStringList, printed);
        std::vector<std::string> words;
        for (const auto &a : args)
            words.push_back(a.toStdString());
        const auto r = parse(words);
        QVERIFY2(r.error.empty(), r.error.c_str());
        QVERIFY(!r.run);
        for (const auto &p : printed)
            QVERIFY2(r.printed.find(p.toStdString()) != std::string::npos,
                     qPrintable(QStringLiteral("missing '%1' in:\n%2").arg(p, QString::fromStdString(r.printed))));
        // The help's own lines are not repeated for each use.
        if (args.first() == QStringLiteral("--help"))
            QCOMPARE(QString::fromStdString(r.printed).count(QStringLiteral("(default: --cpu-percent)")), 1);
    }

    void badCommandLinesAreRefusedByName_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("port out of range") << QStringList{"--join", "wss://h:1/#sha256=ab", "--port", "70000"}
                                           << "--port: 70000 is out of range (0 to 65535)";
        QTest::newRow("steps zero") << QStringList{"--steps=0"} << "--steps: 0 is out of range (1 to 1099511627776)";
        QTest::newRow("steps negative") << QStringList{"--steps", "-1"}
                                        << "--steps: -1 is out of range (1 to 1099511627776)";
        QTest::newRow("not a number") << QStringList{"--steps", "abc"} << "--steps: 'abc' is not a whole number";
        QTest::newRow("not whole") << QStringList{"--batch-size", "1.5"} << "--batch-size: '1.5' is not a whole number";
        QTest::newRow("lr too big") << QStringList{"--lr", "20"} << "--lr: 20 is out of range (1e-06 to 10)";
        QTest::newRow("lr nan") << QStringList{"--lr", "nan"} << "--lr: nan is out of range (1e-06 to 10)";
        QTest::newRow("lr text") << QStringList{"--lr", "fast"} << "--lr: 'fast' is not a number";
        QTest::newRow("cpu percent") << QStringList{"--cpu-percent", "0"}
                                     << "--cpu-percent: 0 is out of range (1 to 100)";
        QTest::newRow("unknown model") << QStringList{"--model", "gpt"} << "--model: 'gpt' is not one of mlp|cnn";
        QTest::newRow("missing value") << QStringList{"--steps"} << "--steps needs a value (N)";
        QTest::newRow("flag with a value") << QStringList{"--quiet=yes"} << "--quiet takes no value";
        QTest::newRow("unknown option") << QStringList{"--bogus=1"}
                                        << "unknown option '--bogus' (try rookery-node --help)";
        QTest::newRow("stray word") << QStringList{"stray"} << "unexpected argument 'stray' (try rookery-node --help)";
        QTest::newRow("bad schedule") << QStringList{"--schedule", "bogus"} << "--schedule: ";
        for (const char *swarmOnly :
             {"--name", "--bind", "--public-address", "--port", "--serve-relay", "--status-port"})
            QTest::newRow(swarmOnly) << QStringList{swarmOnly, "1"} << QString("%1 goes with --join").arg(swarmOnly);
        QTest::newRow("--stay") << QStringList{"--stay"} << "--stay goes with --join";
        QTest::newRow("--peer-compression alone")
            << QStringList{"--peer-compression", "fp16"} << "--peer-compression goes with --join";
        QTest::newRow("unknown compression")
            << QStringList{"--join", "wss://h:1/#sha256=ab", "--peer-compression", "zstd"}
            << "--peer-compression: 'zstd' is not one of none|fp16|bf16";
        QTest::newRow("--ring-compression alone")
            << QStringList{"--ring-compression", "none"} << "--ring-compression goes with --join";
        QTest::newRow("fp16 rings") << QStringList{"--join", "wss://h:1/#sha256=ab", "--ring-compression", "fp16"}
                                    << "--ring-compression: 'fp16' is not one of none|bf16|int8|int4";
        QTest::newRow("--no-port-mapping") << QStringList{"--no-port-mapping"} << "--no-port-mapping goes with --join";
        QTest::newRow("--relay-mbit alone")
            << QStringList{"--join", "wss://h:1/#sha256=" + QString(64, 'a'), "--relay-mbit", "10"}
            << "--relay-mbit goes with --serve-relay";
        QTest::newRow("relay port 0") << QStringList{"--serve-relay", "0"}
                                      << "--serve-relay: 0 is out of range (1 to 65535)";
        QTest::newRow("json alone") << QStringList{"--json"} << "--json and --remeasure go with --profile";
        QTest::newRow("remeasure alone") << QStringList{"--remeasure"} << "--json and --remeasure go with --profile";
        QTest::newRow("profile, no control")
            << QStringList{"--profile", "--no-control"} << "--control-port and --no-control do not go with --profile";
        QTest::newRow("profile, control port") << QStringList{"--profile", "--control-port", "5"}
                                               << "--control-port and --no-control do not go with --profile";
        QTest::newRow("control port and none") << QStringList{"--no-control", "--control-port", "5"}
                                               << "--control-port and --no-control do not go together";
        QTest::newRow("profile and join")
            << QStringList{"--profile", "--join", "wss://h:1/#sha256=ab"} << "--profile and --join do not go together";
    }

    void badCommandLinesAreRefusedByName()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        std::vector<std::string> words;
        for (const auto &a : args)
            words.push_back(a.toStdString());
        const auto r = parse(words);
        QVERIFY(!r.run);
        QVERIFY(r.printed.empty());
        // One line, and exactly the message (or, for the schedule, its beginning).
        QVERIFY2(r.error.find('\n') == std::string::npos, r.error.c_str());
        if (message.endsWith(QLatin1Char(' ')))
            QVERIFY2(r.error.rfind(message.toStdString(), 0) == 0, r.error.c_str());
        else
            QCOMPARE(QString::fromStdString(r.error), message);
    }
};

QTEST_APPLESS_MAIN(TestNodeCli)
#include "tst_node_cli.moc"
