// SPDX-License-Identifier: GPL-3.0-or-later
// The resource governor's rules, each and combined, on a fake clock with fake idle,
// power, memory and CPU-time sources.
#include <QtTest>

#include <atomic>
#include <cmath>
#include <thread>

#include "engine/common/error.h"
#include "engine/device/governor.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_idle_source.h"
#include "tests/fakes/fake_power_source.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;
using device::Governor;
using device::GovernorSettings;
using device::GovernorState;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// One governor wired to fakes. The sources are read at most every pollInterval of
// fake time, so tick() after changing one.
struct Rig
{
    std::shared_ptr<test::FakeClock> clock = std::make_shared<test::FakeClock>();
    std::shared_ptr<test::FakeIdleSource> idle = std::make_shared<test::FakeIdleSource>();
    std::shared_ptr<test::FakePowerSource> power = std::make_shared<test::FakePowerSource>();
    std::shared_ptr<std::atomic<uint64_t>> rss = std::make_shared<std::atomic<uint64_t>>(100 * kMiB);
    std::shared_ptr<std::atomic<int64_t>> cpuNs; // set: measured CPU time; null: busy x cores
    std::chrono::milliseconds dutyPeriod{0};     // rest after every microbatch unless a test says otherwise

    device::GovernorEnvironment environment(bool withIdle = true) const
    {
        device::GovernorEnvironment e;
        e.clock = clock;
        e.idle = withIdle ? idle : nullptr;
        e.power = power;
        e.residentBytes = [r = rss] { return r->load(); };
        if (cpuNs)
            e.cpuTime = [c = cpuNs] { return std::chrono::nanoseconds(c->load()); };
        e.cores = 4;
        e.pollInterval = 100ms;
        e.dutyPeriod = dutyPeriod;
        return e;
    }
    std::unique_ptr<Governor> make(const GovernorSettings &s = {}, bool withIdle = true) const
    {
        return std::make_unique<Governor>(s, environment(withIdle));
    }
    void tick(std::chrono::milliseconds d = 1s) const { clock->advance(d); }
};

#define QCOMPARE_STATE(governor, expectedState, reasonPart)                                                            \
    do {                                                                                                               \
        const auto status_ = (governor).status();                                                                      \
        QCOMPARE(std::string(device::stateName(status_.state)), std::string(device::stateName(expectedState)));        \
        QVERIFY2(QString::fromStdString(status_.reason).contains(QStringLiteral(reasonPart)), status_.reason.c_str()); \
    } while (false)

// Closes the governor and joins the worker when the test ends, also when a check gave up
// early (a joinable thread's destructor would end the process).
auto closeAndJoin(Governor &g, std::thread &worker)
{
    return qScopeGuard([&g, &worker] {
        g.close("stopped: end of test");
        if (worker.joinable())
            worker.join();
    });
}

} // namespace

class TestGovernor : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void defaultsRunWithoutLimits()
    {
        Rig rig;
        auto g = rig.make();
        QCOMPARE_STATE(*g, GovernorState::Running, "running: user active, no limits");
        const auto s = g->status();
        QCOMPARE(s.limits.cores, 4);
        QCOMPARE(s.limits.cpuPercent, 100);
        QCOMPARE(s.idleSource, std::string("fake idle source"));
        QCOMPARE(g->threadConfig(), (device::ThreadConfig{1, 4}));
        const auto a = g->tryEnter();
        QVERIFY(!a.closed);
        QCOMPARE(a.wait.count(), 0);
        QCOMPARE(g->status().inFlight, 1);
        g->leave(10ms);
        QCOMPARE(g->status().inFlight, 0);
    }

    void pauseHoldsUntilResume()
    {
        Rig rig;
        auto g = rig.make();
        g->pause();
        QCOMPARE_STATE(*g, GovernorState::Paused, "paused: by the user");
        QVERIFY(g->status().pausedByUser);
        const auto a = g->tryEnter();
        QVERIFY(!a.closed);
        QVERIFY(a.wait > 0ns);
        rig.tick(1h);
        QCOMPARE_STATE(*g, GovernorState::Paused, "by the user"); // a pause has no end of its own
        g->resume();
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
        QCOMPARE(g->tryEnter().wait.count(), 0);
    }

    void snoozeExpiresByItself()
    {
        Rig rig;
        auto g = rig.make();
        g->snooze(15min);
        QCOMPARE_STATE(*g, GovernorState::Paused, "paused: snoozed until 00:15");
        QCOMPARE(g->status().snoozedUntilMs, int64_t(1704067200 + 15 * 60) * 1000);
        QVERIFY(g->tryEnter().wait <= 15min);
        rig.tick(14min + 59s);
        QCOMPARE_STATE(*g, GovernorState::Paused, "snoozed");
        rig.tick(1s);
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
    }

    void resumeEndsSnoozeAndPause()
    {
        Rig rig;
        auto g = rig.make();
        g->pause();
        g->snooze(30min);
        g->resume();
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
    }

    // Battery: hold at once; resume only after AC has been back for the whole delay.
    void batteryHysteresis()
    {
        Rig rig;
        GovernorSettings s;
        s.batteryResumeSeconds = 60;
        auto g = rig.make(s);
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
        rig.power->onBattery(38);
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Paused, "paused: on battery (38%)");
        QVERIFY(g->status().onBattery);
        QCOMPARE(g->status().batteryPercent.value(), 38);

        rig.power->onAc();
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Paused, "on AC power again");
        rig.tick(30s);
        QCOMPARE_STATE(*g, GovernorState::Paused, "on AC power again");
        rig.power->onBattery(37); // the plug was loose: the wait starts over
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Paused, "on battery (37%)");
        rig.power->onAc();
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Paused, "on AC power again");
        rig.tick(59s);
        QCOMPARE_STATE(*g, GovernorState::Paused, "on AC power again");
        rig.tick(1s);
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
    }

    void batteryRuleCanBeOff()
    {
        Rig rig;
        GovernorSettings s;
        s.pauseOnBattery = false;
        auto g = rig.make(s);
        rig.power->onBattery(20);
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
        s.pauseOnBattery = true;
        g->setSettings(s);
        QCOMPARE_STATE(*g, GovernorState::Paused, "on battery (20%)");
    }

    void noPowerSourceMeansNoBattery()
    {
        Rig rig;
        auto env = rig.environment();
        env.power = nullptr;
        Governor g({}, env);
        QCOMPARE_STATE(g, GovernorState::Running, "running");
        QVERIFY(!g.status().onBattery);
    }

    void scheduleHoldsOutsideItsWindows()
    {
        Rig rig;
        GovernorSettings s;
        s.schedule = "mon-fri 18:00-08:00, sat-sun all day";
        auto g = rig.make(s);
        rig.clock->advanceTo(0, 12, 0); // Monday noon
        QCOMPARE_STATE(*g, GovernorState::Paused, "paused: outside the schedule (next window mon 18:00)");
        rig.clock->advanceTo(0, 18, 0);
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
        rig.clock->advanceTo(1, 7, 59);
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
        rig.tick(1min);
        QCOMPARE_STATE(*g, GovernorState::Paused, "outside the schedule");
        rig.clock->advanceTo(5, 12, 0); // Saturday noon
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
    }

    void idleOnlyWaitsForIdleMinutes()
    {
        Rig rig;
        GovernorSettings s;
        s.runOnlyWhenIdle = true;
        s.idleMinutes = 5;
        auto g = rig.make(s);
        QCOMPARE_STATE(*g, GovernorState::Paused, "paused: user active (run only when idle)");
        rig.idle->set(4min + 59s);
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Paused, "user active");
        rig.idle->set(5min);
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Running, "running: user idle");
        QVERIFY(g->status().userIdle);
        rig.idle->set(0ms); // someone touched the mouse
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Paused, "user active");
        rig.idle->set(std::nullopt); // the source cannot tell: counts as active
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Paused, "user active");
    }

    void withoutIdleSourceTheUserCountsAsActive()
    {
        Rig rig;
        GovernorSettings s;
        s.runOnlyWhenIdle = true;
        auto g = rig.make(s, /*withIdle=*/false);
        QCOMPARE_STATE(*g, GovernorState::Paused, "user counts as active, no idle source");
        QVERIFY(g->status().idleSource.empty());
        s.runOnlyWhenIdle = false;
        s.whenActive.cpuPercent = 50;
        g->setSettings(s);
        QCOMPARE_STATE(*g, GovernorState::Throttled, "throttled: user counts as active (50% CPU)");
    }

    void activeAndIdleLimitsSwitch()
    {
        Rig rig;
        GovernorSettings s;
        s.whenActive = {1, 50, 100, 200};
        s.whenIdle = {0, 100, 0, 0};
        s.idleMinutes = 3;
        auto g = rig.make(s);
        QCOMPARE_STATE(*g, GovernorState::Throttled,
                       "throttled: user active (1 of 4 cores, 50% CPU, upload 100.0 KiB/s, download 200.0 KiB/s)");
        QCOMPARE(g->status().limits, (device::EffectiveLimits{1, 50, 100 * 1024, 200 * 1024}));
        QCOMPARE(g->threadConfig(), (device::ThreadConfig{1, 1}));
        QCOMPARE(g->uploadLimiter().rate(), uint64_t(100 * 1024));
        QCOMPARE(g->downloadLimiter().rate(), uint64_t(200 * 1024));

        rig.idle->set(3min);
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Running, "running: user idle, no limits");
        QCOMPARE(g->cores(), 4);
        QCOMPARE(g->threadConfig(), (device::ThreadConfig{1, 4}));
        QCOMPARE(g->uploadLimiter().rate(), uint64_t(0));
        QCOMPARE(g->downloadLimiter().rate(), uint64_t(0));

        rig.idle->set(10s);
        rig.tick();
        QCOMPARE(g->cores(), 1);
        QCOMPARE(g->uploadLimiter().rate(), uint64_t(100 * 1024));
    }

    void maxCoresBeyondTheMachineMeansAll()
    {
        Rig rig;
        GovernorSettings s;
        s.whenActive.maxCores = 64;
        auto g = rig.make(s);
        QCOMPARE(g->cores(), 4);
        QCOMPARE_STATE(*g, GovernorState::Running, "no limits");
    }

    // The order in which holds explain themselves, and that each one lifts in turn.
    void combinedHoldsLiftInOrder()
    {
        Rig rig;
        GovernorSettings s;
        s.schedule = "mon-fri 18:00-08:00";
        s.runOnlyWhenIdle = true;
        s.batteryResumeSeconds = 0;
        auto g = rig.make(s);
        rig.clock->advanceTo(2, 12, 0); // Wednesday noon: outside the schedule
        rig.power->onBattery(50);
        g->pause();
        g->snooze(10min);
        QCOMPARE_STATE(*g, GovernorState::Paused, "paused: by the user");
        g->resume(); // ends pause and snooze
        QCOMPARE_STATE(*g, GovernorState::Paused, "on battery (50%)");
        rig.power->onAc();
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Paused, "outside the schedule");
        rig.clock->advanceTo(2, 18, 0);
        QCOMPARE_STATE(*g, GovernorState::Paused, "user active (run only when idle)");
        rig.idle->set(1h);
        rig.tick();
        QCOMPARE_STATE(*g, GovernorState::Running, "user idle");
        g->snooze(5min);
        QCOMPARE_STATE(*g, GovernorState::Paused, "snoozed until 18:05");
        rig.tick(5min);
        QCOMPARE_STATE(*g, GovernorState::Running, "user idle");
    }

    void pausedWhileOutsideScheduleStaysPausedInside()
    {
        Rig rig;
        GovernorSettings s;
        s.schedule = "daily 20:00-22:00";
        auto g = rig.make(s);
        g->pause();
        rig.clock->advanceTo(3, 21, 0);
        QCOMPARE_STATE(*g, GovernorState::Paused, "by the user");
        g->resume();
        QCOMPARE_STATE(*g, GovernorState::Running, "running");
        rig.clock->advanceTo(3, 22, 0);
        QCOMPARE_STATE(*g, GovernorState::Paused, "outside the schedule (next window fri 20:00)");
    }

    // Without a CPU clock: after a microbatch busy for b, wait b(1-cap)/cap.
    void dutyCycleArithmetic_data()
    {
        QTest::addColumn<int>("cap");
        QTest::addColumn<qint64>("busyMs");
        QTest::addColumn<qint64>("waitMs");
        QTest::newRow("25%") << 25 << qint64(30) << qint64(90);
        QTest::newRow("50%") << 50 << qint64(30) << qint64(30);
        QTest::newRow("75%") << 75 << qint64(30) << qint64(10);
        QTest::newRow("10%, long step") << 10 << qint64(200) << qint64(1800);
    }

    void dutyCycleArithmetic()
    {
        QFETCH(int, cap);
        QFETCH(qint64, busyMs);
        QFETCH(qint64, waitMs);
        Rig rig;
        GovernorSettings s;
        s.whenActive.cpuPercent = cap;
        auto g = rig.make(s);
        for (int round = 0; round < 3; ++round) {
            QCOMPARE(g->tryEnter().wait.count(), 0);
            rig.clock->advance(std::chrono::milliseconds(busyMs));
            g->leave(std::chrono::milliseconds(busyMs));
            const auto a = g->tryEnter();
            QVERIFY(!a.closed);
            QVERIFY2(std::llabs(a.wait.count() - waitMs * 1'000'000) < 1000,
                     std::to_string(a.wait.count()).c_str()); // exact to a microsecond
            rig.clock->advance(a.wait / 2);
            QVERIFY(g->tryEnter().wait > 0ns); // half way: still waiting
            rig.clock->advance(a.wait - a.wait / 2);
        }
    }

    // With a duty period, work runs and rests in cycles of that length: run about
    // cap x period, rest the remainder, and the average is the cap exactly.
    void dutyCycleInPeriods_data()
    {
        QTest::addColumn<int>("cap");
        QTest::newRow("25%") << 25;
        QTest::newRow("50%") << 50;
        QTest::newRow("75%") << 75;
    }

    void dutyCycleInPeriods()
    {
        QFETCH(int, cap);
        Rig rig;
        rig.dutyPeriod = 1s;
        GovernorSettings s;
        s.whenActive.cpuPercent = cap;
        auto g = rig.make(s);
        const auto start = rig.clock->steadyNow();
        std::chrono::nanoseconds busy{0}, longestRest{0}, firstRun{0};
        int rests = 0;
        while (rig.clock->steadyNow() - start < 60s) {
            const auto a = g->tryEnter();
            if (a.wait > 0ns) {
                if (rests == 0)
                    firstRun = rig.clock->steadyNow() - start;
                rig.clock->advance(a.wait);
                longestRest = std::max(longestRest, a.wait);
                ++rests;
                continue;
            }
            rig.clock->advance(7ms); // a microbatch
            g->leave(7ms);
            busy += 7ms;
        }
        const double fraction = double(busy.count()) / double((rig.clock->steadyNow() - start).count());
        // The first cycle is a whole one: a full run first, not a short run and a long rest.
        QVERIFY2(std::chrono::abs(firstRun - std::chrono::milliseconds(10 * cap)) <= 10ms,
                 std::to_string(firstRun.count()).c_str());
        QVERIFY2(std::fabs(fraction - cap / 100.0) < 0.01, std::to_string(fraction).c_str());
        // About one rest per period, each (1 - cap) of it plus the debt of the last microbatch.
        QVERIFY2(rests >= 55 && rests <= 65, std::to_string(rests).c_str());
        QVERIFY(longestRest >= std::chrono::milliseconds(10 * (100 - cap)));
        QVERIFY2(longestRest <= std::chrono::milliseconds(10 * (100 - cap) + 30),
                 std::to_string(longestRest.count()).c_str());
    }

    // Two threads busy at once each pay for the other: the cap holds for the process.
    void dutyCycleAccountsAcrossThreads()
    {
        Rig rig;
        GovernorSettings s;
        s.whenActive.cpuPercent = 50;
        auto g = rig.make(s);
        QCOMPARE(g->tryEnter().wait.count(), 0);
        QCOMPARE(g->tryEnter().wait.count(), 0);
        QCOMPARE(g->status().inFlight, 2);
        rig.clock->advance(10ms);
        g->leave(10ms);
        g->leave(10ms);
        // 2 x 10 ms x 4 cores used, 50% x 4 cores x 10 ms earned: 60 core-ms of debt at 2 cores/s.
        QCOMPARE(g->tryEnter().wait, std::chrono::nanoseconds(30ms));
    }

    // With a CPU clock, CPU used outside microbatches (helpers, evaluation) counts too.
    void measuredCpuTimeIsCharged()
    {
        Rig rig;
        rig.cpuNs = std::make_shared<std::atomic<int64_t>>(0);
        GovernorSettings s;
        s.whenActive.cpuPercent = 50;
        s.whenActive.maxCores = 2;
        auto g = rig.make(s);
        QCOMPARE(g->tryEnter().wait.count(), 0);
        rig.clock->advance(100ms);
        *rig.cpuNs += 300'000'000; // 300 ms of CPU over 2 cores in 100 ms of wall time
        g->leave(100ms);
        // earned 0.5 x 2 x 100 ms = 100 ms; used 300 ms: 200 ms of debt at 1 core/s
        QCOMPARE(g->tryEnter().wait, std::chrono::nanoseconds(200ms));
        rig.clock->advance(200ms);
        QCOMPARE(g->tryEnter().wait.count(), 0);
    }

    void cpuUsedDuringAPauseIsNotOwed()
    {
        Rig rig;
        rig.cpuNs = std::make_shared<std::atomic<int64_t>>(0);
        GovernorSettings s;
        s.whenActive.cpuPercent = 50;
        auto g = rig.make(s);
        QCOMPARE(g->tryEnter().wait.count(), 0);
        rig.clock->advance(10ms);
        g->leave(10ms);
        g->pause();
        *rig.cpuNs += 10'000'000'000; // ten seconds of evaluation and UI while paused
        rig.tick(1min);
        g->resume();
        QCOMPARE(g->tryEnter().wait.count(), 0);
        rig.clock->advance(100ms);
        *rig.cpuNs += 400'000'000; // 4 cores busy for 100 ms: the cap applies again at once
        g->leave(100ms);
        QCOMPARE(g->tryEnter().wait, std::chrono::nanoseconds(100ms));
    }

    void fullCapNeverWaitsAndQuietTimeBanksLittle()
    {
        Rig rig;
        GovernorSettings s;
        auto g = rig.make(s);
        for (int i = 0; i < 10; ++i) {
            QCOMPARE(g->tryEnter().wait.count(), 0);
            rig.clock->advance(50ms);
            g->leave(50ms);
        }
        s.whenActive.cpuPercent = 50;
        g->setSettings(s);
        rig.tick(1h); // an hour of quiet must not buy an hour of full speed
        QCOMPARE(g->tryEnter().wait.count(), 0);
        rig.clock->advance(1s);
        g->leave(1s);
        QVERIFY(g->tryEnter().wait > 800ms);
    }

    void memoryCapStopsForGood()
    {
        Rig rig;
        GovernorSettings s;
        s.memoryCapMiB = 200;
        auto g = rig.make(s);
        QCOMPARE(g->tryEnter().wait.count(), 0);
        g->leave(1ms);
        rig.rss->store(201 * kMiB);
        QVERIFY(g->tryEnter().closed);
        QCOMPARE_STATE(*g, GovernorState::Stopped, "stopped: resident memory 201.0 MiB crossed the cap of 200.0 MiB");
        rig.rss->store(50 * kMiB); // memory going down again does not reopen the gate
        QVERIFY(g->tryEnter().closed);
        QVERIFY(!g->enter());
        g->resume();
        QVERIFY(!g->enter());
    }

    void memoryCapRefusesWorkThatWillNotFit()
    {
        Rig rig;
        GovernorSettings s;
        s.memoryCapMiB = 200;
        auto g = rig.make(s);
        g->checkFits(50 * kMiB, "the MLP");
        try {
            g->checkFits(150 * kMiB, "the MLP");
            QFAIL("expected rookery::Error");
        } catch (const Error &e) {
            QVERIFY2(QString(e.what()).contains("memory cap of 200.0 MiB leaves no room for the MLP"), e.what());
        }
        s.memoryCapMiB = 0; // no cap: anything fits
        g->setSettings(s);
        g->checkFits(uint64_t(1) << 40, "a huge model");
    }

    void observerHearsChangesOnly()
    {
        Rig rig;
        auto g = rig.make();
        QStringList heard;
        g->setObserver([&](const device::GovernorStatus &s) { heard << QString::fromStdString(s.reason); });
        g->status();
        g->tryEnter();
        g->leave(1ms);
        QVERIFY(heard.isEmpty());
        g->pause();
        g->status();
        g->resume();
        QCOMPARE(heard, (QStringList{"paused: by the user", "running: user active, no limits"}));
    }

    void closeExplainsItself()
    {
        Rig rig;
        auto g = rig.make();
        g->close("stopped: shutting down for the test");
        QCOMPARE_STATE(*g, GovernorState::Stopped, "shutting down for the test");
        QVERIFY(g->tryEnter().closed);
    }

    // Real threads: a thread held in enter() wakes at once on resume and on close, not
    // at the next poll (the poll interval here is far longer than the test waits).
    void blockedThreadWakesOnResume()
    {
        Rig rig;
        auto env = rig.environment();
        env.pollInterval = 1h;
        Governor g({}, env);
        g.pause();
        std::atomic<int> entered{0};
        std::thread worker([&] {
            if (g.enter()) {
                ++entered;
                g.leave(1ms);
            }
        });
        const auto joinWorker = closeAndJoin(g, worker);
        std::this_thread::sleep_for(50ms);
        QCOMPARE(entered.load(), 0);
        g.resume();
        QVERIFY(test::waitFor([&] { return entered.load() == 1; }, 10s));
        worker.join();
    }

    void blockedThreadWakesOnClose()
    {
        Rig rig;
        auto env = rig.environment();
        env.pollInterval = 1h;
        Governor g({}, env);
        g.pause();
        std::atomic<int> result{-1};
        std::thread worker([&] { result = g.enter() ? 1 : 0; });
        const auto joinWorker = closeAndJoin(g, worker);
        std::this_thread::sleep_for(50ms);
        QCOMPARE(result.load(), -1);
        g.close("stopped: test");
        QVERIFY(test::waitFor([&] { return result.load() == 0; }, 10s));
        worker.join();
    }

    // A pause takes effect within one microbatch: at most the one already past the door
    // finishes after pause() returns.
    void pauseTakesEffectWithinOneMicrobatch()
    {
        Governor g({}, Rig().environment()); // real waits, fake sources
        std::atomic<int> started{0};
        std::atomic<bool> done{false};
        std::thread worker([&] {
            while (g.enter()) {
                ++started;
                std::this_thread::sleep_for(1ms);
                g.leave(1ms);
            }
            done = true;
        });
        const auto joinWorker = closeAndJoin(g, worker);
        QVERIFY(test::waitFor([&] { return started.load() > 5; }, 10s));
        g.pause();
        const int atPause = started.load();
        std::this_thread::sleep_for(100ms);
        QVERIFY(started.load() - atPause <= 1);
        QCOMPARE(g.status().inFlight, 0);
        g.resume();
        QVERIFY(test::waitFor([&] { return started.load() > atPause + 5; }, 10s));
        g.close("stopped: end of test");
        QVERIFY(test::waitFor([&] { return done.load(); }, 10s));
        worker.join();
    }
};

QTEST_APPLESS_MAIN(TestGovernor)
#include "tst_governor.moc"
