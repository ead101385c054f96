// SPDX-License-Identifier: GPL-3.0-or-later
// The run's settings as the coordinator keeps and sends them: the outer step's settings
// and the window cap survive the wire and the database, older coordinators and databases
// (which had neither) mean plain averaging and the nodes' own cap, and bad values are
// refused with the field named.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/coord/coord_json.h"
#include "engine/coord/wire_convert.h"
#include "engine/model/model_zoo.h"

using namespace rookery;
using namespace rookery::coord;

namespace {

RunConfig diLoCoRun()
{
    RunConfig r;
    r.runId = "run-1";
    r.model = model::mlpSpec();
    r.averagingInterval = 100;
    r.outerLearningRate = 0.7;
    r.outerMomentum = 0.9;
    r.overlapAveraging = true;
    r.maxWindow = 3;
    return r;
}

} // namespace

class TestRunConfig : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void outerSettingsCrossTheWire()
    {
        const RunConfig r = diLoCoRun();
        const net::RunInfo w = toWire(r);
        QCOMPARE(w.outerLearningRate, 0.7);
        QCOMPARE(w.outerMomentum, 0.9);
        QVERIFY(w.overlapAveraging);
        QCOMPARE(w.maxWindow, 3u);
        QCOMPARE(fromWire(w), r);
    }

    void aCoordinatorThatSendsNoneMeansPlainAveraging()
    {
        net::RunInfo w = toWire(diLoCoRun());
        w.outerLearningRate = 0; // proto3's default: the field was not sent
        w.outerMomentum = 0;
        const RunConfig r = fromWire(w);
        QCOMPARE(r.outerLearningRate, 1.0);
        QCOMPARE(r.outerMomentum, 0.0);
        // A momentum of 1 or more would grow without bound: a node refuses such a run.
        w.outerLearningRate = 0.7;
        w.outerMomentum = 1.5;
        QVERIFY_THROWS_EXCEPTION(Error, fromWire(w));
    }

    void outerSettingsAreStored()
    {
        const RunConfig r = diLoCoRun();
        QCOMPARE(runConfigFromJson(toJson(r)), r);
        // A run stored before the outer step existed averages plainly.
        auto j = nlohmann::json::parse(toJson(r));
        j.erase("outer_learning_rate");
        j.erase("outer_momentum");
        j.erase("overlap_averaging");
        j.erase("max_window");
        const RunConfig old = runConfigFromJson(j.dump());
        QCOMPARE(old.maxWindow, int64_t(0)); // the nodes' default
        QCOMPARE(old.outerLearningRate, 1.0);
        QCOMPARE(old.outerMomentum, 0.0);
        QVERIFY(!old.overlapAveraging);
    }

    void badOuterSettingsAreRefused()
    {
        RunConfig r = diLoCoRun();
        validate(r);
        r.outerMomentum = 1;
        QVERIFY_THROWS_EXCEPTION(Error, validate(r));
        try {
            validate(r);
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find("outer momentum") != std::string::npos, e.what());
        }
        r.outerMomentum = 0.9;
        r.outerLearningRate = -1;
        QVERIFY_THROWS_EXCEPTION(Error, validate(r));
    }

    void aWindowCapOutOfRangeIsRefused()
    {
        RunConfig r = diLoCoRun();
        r.maxWindow = kMaxWindowLimit + 1;
        try {
            validate(r);
            QFAIL("a window cap of 17 passed");
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find("window cap") != std::string::npos, e.what());
        }
        // From the wire too: a coordinator cannot make a node keep 1,000 microbatches in flight.
        net::RunInfo w = toWire(diLoCoRun());
        w.maxWindow = 1000;
        QVERIFY_THROWS_EXCEPTION(Error, fromWire(w));
    }
};

QTEST_GUILESS_MAIN(TestRunConfig)
#include "tst_run_config.moc"
