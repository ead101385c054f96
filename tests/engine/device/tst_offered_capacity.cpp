// SPDX-License-Identifier: GPL-3.0-or-later
// What a volunteer offers the swarm: its measured profile within its memory cap; GPUs
// offer nothing while stages train on the CPU.
#include <QtTest>

#include "engine/device/offered_capacity.h"

using namespace rookery;
using device::CapabilityProfile;
using device::GovernorSettings;

class TestOfferedCapacity : public QObject
{
    Q_OBJECT

    static CapabilityProfile measured()
    {
        CapabilityProfile p;
        p.logicalCores = 16;
        p.gflopsOneThread = 20;
        p.gflopsAllThreads = 240;
        p.ramAvailableBytes = uint64_t(8) << 30;
        p.gpus.push_back({"a GPU", uint64_t(16) << 30, 20'000});
        return p;
    }

private Q_SLOTS:
    void withoutCapsTheCpuIsOfferedAsMeasured()
    {
        const auto p = device::offeredProfile(measured(), GovernorSettings{});
        QCOMPARE(p.gflopsAllThreads, 240.0);
        QCOMPARE(p.gflopsOneThread, 20.0);
        QCOMPARE(p.ramAvailableBytes, uint64_t(8) << 30);
        QCOMPARE(p.gpus.size(), size_t(1));
        QCOMPARE(p.gpus[0].name, std::string("a GPU"));
        QCOMPARE(p.gpus[0].gflops, 0.0); // not trained on
    }

    void theMemoryCapLimitsTheOffer()
    {
        GovernorSettings caps;
        caps.memoryCapMiB = 1024;
        const auto p = device::offeredProfile(measured(), caps);
        QCOMPARE(p.ramAvailableBytes, (uint64_t(1) << 30) - device::kTrainingAllowanceBytes);
        QCOMPARE(p.gflopsAllThreads, 240.0);
        QCOMPARE(p.gflopsOneThread, 20.0);
        // A memory cap above what is available changes nothing.
        caps.memoryCapMiB = 64 * 1024;
        QCOMPARE(device::offeredProfile(measured(), caps).ramAvailableBytes, uint64_t(8) << 30);
    }

    // Cores cap at one thread's figure per core (never above all threads measured), the
    // CPU share scales both; the limits that count are those while the user is active,
    // or while idle for a volunteer who runs only then.
    void theCpuCapsScaleTheOfferedSpeed()
    {
        GovernorSettings caps;
        caps.whenActive.maxCores = 2;
        caps.whenActive.cpuPercent = 50;
        caps.whenIdle.maxCores = 0;
        caps.whenIdle.cpuPercent = 100;
        auto p = device::offeredProfile(measured(), caps);
        QCOMPARE(p.gflopsAllThreads, 2 * 20.0 * 0.5);
        QCOMPARE(p.gflopsOneThread, 20.0 * 0.5);
        caps.whenActive.maxCores = 16; // 16 x 20 is more than the 240 measured on all threads
        QCOMPARE(device::offeredProfile(measured(), caps).gflopsAllThreads, 240.0 * 0.5);
        caps.whenActive.maxCores = 0;
        caps.whenActive.cpuPercent = 25;
        QCOMPARE(device::offeredProfile(measured(), caps).gflopsAllThreads, 60.0);
        caps.runOnlyWhenIdle = true; // then only the idle limits ever apply
        p = device::offeredProfile(measured(), caps);
        QCOMPARE(p.gflopsAllThreads, 240.0);
        QCOMPARE(p.gflopsOneThread, 20.0);
        caps.whenIdle.cpuPercent = 10;
        QCOMPARE(device::offeredProfile(measured(), caps).gflopsAllThreads, 24.0);
    }

    // The cap is on the whole process: what the process holds already, and what training
    // takes beside the planned memory, are not offered.
    void theMemoryCapLessWhatTheProcessHoldsIsOffered()
    {
        QCOMPARE(device::kTrainingAllowanceBytes, uint64_t(64) << 20);
        GovernorSettings caps;
        caps.memoryCapMiB = 512;
        const uint64_t resident = uint64_t(220) << 20;
        QCOMPARE(device::offeredProfile(measured(), caps, resident).ramAvailableBytes, uint64_t(512 - 220 - 64) << 20);
        caps.memoryCapMiB = 250; // above what it holds, but not above that and the allowance
        QCOMPARE(device::offeredProfile(measured(), caps, resident).ramAvailableBytes, uint64_t(0));
        caps.memoryCapMiB = 200; // less than it holds: nothing to offer
        QCOMPARE(device::offeredProfile(measured(), caps, resident).ramAvailableBytes, uint64_t(0));
        caps.memoryCapMiB = 0; // no cap: what the machine has available
        QCOMPARE(device::offeredProfile(measured(), caps, resident).ramAvailableBytes, uint64_t(8) << 30);
    }
};

QTEST_GUILESS_MAIN(TestOfferedCapacity)
#include "tst_offered_capacity.moc"
