// SPDX-License-Identifier: GPL-3.0-or-later
// What a volunteer offers the swarm: its measured profile within its caps (memory,
// cores, CPU share while its user is active); GPUs offer nothing while stages train on
// the CPU.
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

    void theCapsLimitTheOffer()
    {
        GovernorSettings caps;
        caps.whenActive.maxCores = 2;
        caps.whenActive.cpuPercent = 50;
        caps.memoryCapMiB = 1024;
        const auto p = device::offeredProfile(measured(), caps);
        QCOMPARE(p.ramAvailableBytes, uint64_t(1) << 30);
        // Two cores of one thread's 20 GFLOP/s, at half their time.
        QCOMPARE(p.gflopsAllThreads, 20.0);
        QCOMPARE(p.gflopsOneThread, 10.0);
        // A memory cap above what is available changes nothing.
        caps.memoryCapMiB = 64 * 1024;
        QCOMPARE(device::offeredProfile(measured(), caps).ramAvailableBytes, uint64_t(8) << 30);
        // More cores than all threads' figure covers: that figure stands.
        caps.whenActive.maxCores = 64;
        caps.whenActive.cpuPercent = 100;
        QCOMPARE(device::offeredProfile(measured(), caps).gflopsAllThreads, 240.0);
        // The idle limits are not counted on: the plan assumes the user is at the keyboard.
        caps.whenActive = {};
        caps.whenIdle.maxCores = 1;
        QCOMPARE(device::offeredProfile(measured(), caps).gflopsAllThreads, 240.0);
    }
};

QTEST_GUILESS_MAIN(TestOfferedCapacity)
#include "tst_offered_capacity.moc"
