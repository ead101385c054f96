// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include "engine/common/arg_parser.h"
#include "engine/common/error.h"

using rookery::ArgParser;

class TestArgParser : public QObject
{
    Q_OBJECT

private:
    struct Opts
    {
        int64_t steps = 10;
        double lr = 0.1;
        std::string name = "x";
        std::string mode = "a";
        bool flag = false;
    };
    static ArgParser make(Opts &o)
    {
        ArgParser p("prog", "summary");
        p.option("steps", "N", "steps", &o.steps, 1, 100);
        p.option("lr", "RATE", "rate", &o.lr, 0.0, 1.0);
        p.option("name", "NAME", "name", &o.name);
        p.choice("mode", "mode", &o.mode, {"a", "b"});
        p.flag("flag", "a flag", &o.flag);
        return p;
    }
    static ArgParser::Outcome parse(ArgParser &p, std::vector<const char *> args)
    {
        args.insert(args.begin(), "prog");
        return p.parse(int(args.size()), args.data());
    }

private Q_SLOTS:
    void defaultsStayWhenNothingGiven()
    {
        Opts o;
        auto p = make(o);
        QCOMPARE(parse(p, {}), ArgParser::Outcome::Run);
        QCOMPARE(o.steps, 10);
        QCOMPARE(o.name, std::string("x"));
        QVERIFY(!p.given("steps"));
    }

    void parsesBothForms()
    {
        Opts o;
        auto p = make(o);
        parse(p, {"--steps", "42", "--lr=0.5", "--name", "run 1", "--mode=b", "--flag"});
        QCOMPARE(o.steps, 42);
        QCOMPARE(o.lr, 0.5);
        QCOMPARE(o.name, std::string("run 1"));
        QCOMPARE(o.mode, std::string("b"));
        QVERIFY(o.flag);
        QVERIFY(p.given("steps"));
    }

    void rejectsBadInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("unknown") << QStringList{"--nope"} << "--nope";
        QTest::newRow("not a number") << QStringList{"--steps", "ten"} << "not a whole number";
        QTest::newRow("trailing junk") << QStringList{"--steps", "10x"} << "not a whole number";
        QTest::newRow("below range") << QStringList{"--steps", "0"} << "out of range";
        QTest::newRow("above range") << QStringList{"--lr", "2"} << "out of range";
        QTest::newRow("negative") << QStringList{"--steps=-5"} << "out of range";
        QTest::newRow("missing value") << QStringList{"--steps"} << "needs a value";
        QTest::newRow("bad choice") << QStringList{"--mode", "c"} << "not one of";
        QTest::newRow("flag with value") << QStringList{"--flag=1"} << "takes no value";
        QTest::newRow("positional") << QStringList{"stray"} << "unexpected argument";
    }

    void rejectsBadInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, mentions);
        Opts o;
        const Opts before = o;
        auto p = make(o);
        std::vector<std::string> storage;
        for (const auto &a : args)
            storage.push_back(a.toStdString());
        std::vector<const char *> argv;
        for (const auto &s : storage)
            argv.push_back(s.c_str());
        try {
            parse(p, argv);
            QFAIL("expected an error");
        } catch (const rookery::Error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(mentions), e.what());
        }
        QCOMPARE(o.steps, before.steps);
    }

    void helpListsDefaults()
    {
        Opts o;
        auto p = make(o);
        const QString help = QString::fromStdString(p.helpText());
        QVERIFY(help.contains(QStringLiteral("--steps N")));
        QVERIFY(help.contains(QStringLiteral("(default: 10)")));
        QVERIFY(help.contains(QStringLiteral("--mode a|b")));
    }
};

QTEST_APPLESS_MAIN(TestArgParser)
#include "tst_arg_parser.moc"
