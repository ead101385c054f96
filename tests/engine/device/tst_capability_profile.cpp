// SPDX-License-Identifier: GPL-3.0-or-later
// Capability profile: JSON, hardware key, the cache policy (30 days, hardware change,
// on request) on a fake clock and a fake measurement, and one real quick measurement.
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/error.h"
#include "engine/device/capability_profile.h"
#include "engine/device/hardware_info.h"
#include "engine/device/profile_probe.h"
#include "engine/device/profile_service.h"
#include "engine/store/profile_cache.h"

using namespace rookery;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kDayMs = 24 * 3600 * 1000;

device::CapabilityProfile sample()
{
    device::CapabilityProfile p;
    p.cpuModel = "Test CPU @ 3.0GHz";
    p.physicalCores = 4;
    p.logicalCores = 8;
    p.allowedCores = 8;
    p.ramTotalBytes = uint64_t(16) << 30;
    p.ramAvailableBytes = uint64_t(9) << 30;
    p.gflopsOneThread = 61.25;
    p.gflopsAllThreads = 230.5;
    p.memoryBandwidthBytesPerSecond = 12.5e9;
    p.dataDir = "/home/me/.local/share/rookery";
    p.diskFreeBytes = uint64_t(100) << 30;
    p.gpus = {{"NVIDIA Test 4090", uint64_t(24) << 30, 80000.5}};
    p.blas = "OpenBLAS 0.3.21";
    p.measuredAtMs = 1'700'000'000'000;
    p.measureSeconds = 2.5;
    return p;
}

} // namespace

class TestCapabilityProfile : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    fs::path dbPath(const char *name) const { return fs::path(m_dir.path().toStdString()) / name; }

    // The policy with a measurement that counts its calls and stamps `now`.
    struct Policy
    {
        store::ProfileCache cache;
        int measurements = 0;
        explicit Policy(const fs::path &db)
            : cache(db)
        { }
        device::ProfileLookup lookup(const device::CapabilityProfile &hw, int64_t now, bool remeasure = false)
        {
            return device::cachedOrMeasured(cache, hw, now, remeasure, [&] {
                ++measurements;
                auto p = hw;
                p.gflopsOneThread = 10.0 * measurements;
                p.measuredAtMs = now;
                return p;
            });
        }
    };

private Q_SLOTS:
    void jsonRoundTrip()
    {
        const auto p = sample();
        QVERIFY(device::capabilityProfileFromJson(device::toJson(p)) == p);
        auto none = p;
        none.gpus.clear();
        QVERIFY(device::capabilityProfileFromJson(device::toJson(none)) == none);
    }

    void malformedJsonIsAClearError()
    {
        for (const char *text : {"", "{", "[]", R"({"cpu_model": 5})"}) {
            try {
                device::capabilityProfileFromJson(text);
                QFAIL("expected rookery::Error");
            } catch (const Error &e) {
                QVERIFY2(QString(e.what()).contains("capability profile is not valid JSON"), e.what());
            }
        }
    }

    void hardwareKeyFollowsHardwareOnly()
    {
        const auto p = sample();
        auto q = p;
        q.ramAvailableBytes = 1;
        q.diskFreeBytes = 2;
        q.gflopsAllThreads = 1;
        q.allowedCores = 2;
        q.ramTotalBytes += 100 << 20; // the kernel's share of RAM moves a little between boots
        QCOMPARE(device::hardwareKey(q), device::hardwareKey(p));
        for (int change = 0; change < 4; ++change) {
            auto r = p;
            if (change == 0)
                r.cpuModel = "Other CPU";
            if (change == 1)
                r.physicalCores = 6;
            if (change == 2)
                r.ramTotalBytes = uint64_t(32) << 30;
            if (change == 3)
                r.gpus.push_back({"Second GPU", 1, 1});
            QVERIFY(device::hardwareKey(r) != device::hardwareKey(p));
        }
    }

    void readableDescription()
    {
        const std::string text = device::describe(sample());
        QVERIFY(text.find("Test CPU @ 3.0GHz (4 cores, 8 threads, 8 allowed)") != std::string::npos);
        QVERIFY(text.find("61.2 GFLOP/s on 1 thread, 230.5 GFLOP/s on 8 cores") != std::string::npos);
        QVERIFY(text.find("NVIDIA Test 4090, 24.0 GiB") != std::string::npos);
        auto none = sample();
        none.gpus.clear();
        QVERIFY(device::describe(none).find("none that LibTorch can use") != std::string::npos);
    }

    void cacheServesFreshProfiles()
    {
        Policy policy(dbPath("fresh.db"));
        auto hw = sample();
        const int64_t t0 = hw.measuredAtMs;
        auto first = policy.lookup(hw, t0);
        QVERIFY(first.measured);
        QCOMPARE(first.why, std::string("no profile measured yet"));
        hw.ramAvailableBytes = 123;
        hw.diskFreeBytes = 456;
        const auto second = policy.lookup(hw, t0 + 3 * kDayMs);
        QVERIFY(!second.measured);
        QCOMPARE(policy.measurements, 1);
        QCOMPARE(second.why, std::string("measured 3 days ago"));
        QCOMPARE(second.profile.gflopsOneThread, 10.0);            // measured values from the cache
        QCOMPARE(second.profile.ramAvailableBytes, uint64_t(123)); // fresh values from now
        QCOMPARE(second.profile.diskFreeBytes, uint64_t(456));
    }

    void measuresAgainAfter30Days()
    {
        Policy policy(dbPath("old.db"));
        const auto hw = sample();
        policy.lookup(hw, 0);
        QVERIFY(!policy.lookup(hw, 30 * kDayMs).measured); // exactly 30 days: still good
        const auto old = policy.lookup(hw, 30 * kDayMs + 1);
        QVERIFY(old.measured);
        QCOMPARE(old.why, std::string("the cached profile is 30 days old"));
        QCOMPARE(policy.measurements, 2);
        QVERIFY(!policy.lookup(hw, 31 * kDayMs).measured); // the new one is fresh
    }

    void measuresAgainWhenHardwareChanges()
    {
        Policy policy(dbPath("hw.db"));
        auto hw = sample();
        policy.lookup(hw, 0);
        hw.ramTotalBytes = uint64_t(64) << 30; // more RAM fitted
        const auto changed = policy.lookup(hw, kDayMs);
        QVERIFY(changed.measured);
        QCOMPARE(changed.why, std::string("hardware changed since the last measurement"));
        QCOMPARE(policy.measurements, 2);
    }

    void measuresAgainOnRequest()
    {
        Policy policy(dbPath("request.db"));
        const auto hw = sample();
        policy.lookup(hw, 0);
        const auto again = policy.lookup(hw, 1000, /*remeasure=*/true);
        QVERIFY(again.measured);
        QCOMPARE(again.why, std::string("measured again on request"));
        QCOMPARE(policy.lookup(hw, 2000).profile.gflopsOneThread, 20.0); // the newest is served
    }

    void unreadableCacheEntryIsMeasuredAgain()
    {
        Policy policy(dbPath("bad.db"));
        const auto hw = sample();
        policy.cache.save({device::hardwareKey(hw), 0, "{not json"});
        const auto r = policy.lookup(hw, 1000);
        QVERIFY(r.measured);
        QCOMPARE(r.why, std::string("the cached profile was unreadable"));
    }

    void parsesProcFiles()
    {
        device::HardwareInfo info;
        device::parseCpuInfo("processor\t: 0\nmodel name\t: Fancy CPU\nphysical id\t: 0\ncore id\t\t: 0\n\n"
                             "processor\t: 1\nmodel name\t: Fancy CPU\nphysical id\t: 0\ncore id\t\t: 0\n\n"
                             "processor\t: 2\nmodel name\t: Fancy CPU\nphysical id\t: 1\ncore id\t\t: 0\n\n",
                             info);
        QCOMPARE(info.cpuModel, std::string("Fancy CPU"));
        QCOMPARE(info.logicalCores, 3);
        QCOMPARE(info.physicalCores, 2); // two sockets, one core each, one with two threads
        device::HardwareInfo arm;
        device::parseCpuInfo("processor\t: 0\nBogoMIPS\t: 48.00\n\nprocessor\t: 1\n", arm);
        QCOMPARE(arm.physicalCores, 2);
        QCOMPARE(arm.cpuModel, std::string("unknown CPU"));
        device::parseMemInfo("MemTotal:       24683656 kB\nMemFree:  1 kB\nMemAvailable:   24023980 kB\n", info);
        QCOMPARE(info.ramTotalBytes, uint64_t(24683656) * 1024);
        QCOMPARE(info.ramAvailableBytes, uint64_t(24023980) * 1024);
    }

    // A real, quick measurement on this machine: plausible figures, no GPU with
    // Debian's CPU-only LibTorch, and a round trip through the real cache.
    void realQuickMeasurementIsSane()
    {
        const fs::path dir = m_dir.path().toStdString();
        const auto p = device::measureCapabilityProfile(dir, device::ProfileOptions::quick());
        QVERIFY(!p.cpuModel.empty());
        QVERIFY(p.logicalCores >= 1);
        QVERIFY(p.physicalCores >= 1 && p.physicalCores <= p.logicalCores);
        QVERIFY(p.allowedCores >= 1 && p.allowedCores <= p.logicalCores);
        QVERIFY(p.ramTotalBytes > (uint64_t(256) << 20));
        QVERIFY(p.ramAvailableBytes > 0 && p.ramAvailableBytes <= p.ramTotalBytes);
        QVERIFY2(p.gflopsOneThread > 0.1 && p.gflopsOneThread < 1e5, std::to_string(p.gflopsOneThread).c_str());
        QVERIFY(p.gflopsAllThreads > 0.1);
        QVERIFY(p.memoryBandwidthBytesPerSecond > 1e8);
        QVERIFY(p.diskFreeBytes > 0);
        QCOMPARE(p.dataDir, dir.string());
        QVERIFY(p.gpus.empty() || !p.gpus.front().name.empty());
        QVERIFY(p.measuredAtMs > 1'600'000'000'000);
        QVERIFY(p.measureSeconds > 0 && p.measureSeconds < 10);
        QVERIFY(device::hardwareKey(p) == device::hardwareKey(device::readHardwareProfile(dir)));
    }
};

QTEST_APPLESS_MAIN(TestCapabilityProfile)
#include "tst_capability_profile.moc"
