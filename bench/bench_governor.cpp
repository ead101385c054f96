// SPDX-License-Identifier: GPL-3.0-or-later
// bench_governor: the resource governor on real training (the MLP on Fashion-MNIST).
//  - CPU cap at 25, 50 and 75%: the process's CPU-time fraction, defined as
//    process CPU time / (wall time x cores allowed), against each cap. The baseline in
//    the same process is the classic duty cycle that charges busy time x cores instead
//    of measured CPU time, and an uncapped run shows how much CPU the machine gave us.
//  - Pause: time from pause() until no microbatch is in flight, and until the process
//    uses no CPU (under 5% of one core over 50 ms).
//  - Memory cap: work that will not fit is refused; a growing process is stopped at
//    the first microbatch after its resident memory crosses the cap.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <list>
#include <thread>
#include <vector>

#include "bench/support/bench_report.h"
#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/data/image_dataset.h"
#include "engine/device/compute_threads.h"
#include "engine/device/governor.h"
#include "engine/device/process_usage.h"
#include "engine/model/model_zoo.h"
#include "engine/train/trainer.h"

using namespace rookery;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::unique_ptr<train::Trainer> makeTrainer(const std::shared_ptr<const data::ImageDataset> &data)
{
    train::TrainerConfig c;
    c.model = model::mlpSpec();
    c.optimizer.learningRate = 0.05;
    c.optimizer.momentum = 0.9;
    c.batchSize = 64;
    return std::make_unique<train::Trainer>(c, data);
}

// The real world minus the idle and power sources, which must not pause a benchmark.
device::GovernorEnvironment benchEnvironment(bool measuredCpu)
{
    device::GovernorEnvironment e = device::systemEnvironment();
    e.idle = nullptr;
    e.power = nullptr;
    if (!measuredCpu)
        e.cpuTime = nullptr;
    return e;
}

device::GovernorSettings capped(int percent)
{
    device::GovernorSettings s;
    s.whenActive.cpuPercent = s.whenIdle.cpuPercent = percent;
    s.pauseOnBattery = false;
    return s;
}

struct CapRun
{
    double cpuPercent = 0; // of wall time x cores allowed
    double stepsPerSecond = 0;
};

// Trains through a governor capped at `cap` for `duration`, then on to the end of the
// duty cycle in progress: the window covers whole run-and-rest cycles (1 s each), so a
// run at the end is not counted without its rest.
CapRun trainUnderCap(train::Trainer &trainer, int cap, bool measuredCpu, double duration, int cores)
{
    device::Governor gate(capped(cap), benchEnvironment(measuredCpu));
    int64_t steps = 0;
    const auto cpu0 = device::processCpuTime();
    const auto t0 = Clock::now();
    const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration));
    for (;;) {
        const auto asked = Clock::now();
        if (!gate.enter())
            break;
        const bool rested = Clock::now() - asked > 2ms;
        if (Clock::now() >= end && (rested || cap == 100)) {
            gate.leave(0ns);
            break;
        }
        const auto start = Clock::now();
        trainer.step();
        gate.leave(Clock::now() - start);
        ++steps;
    }
    const double wall = seconds(Clock::now() - t0);
    const double cpu = std::chrono::duration<double>(device::processCpuTime() - cpu0).count();
    return {100.0 * cpu / (wall * cores), double(steps) / wall};
}

struct PauseTrial
{
    double toIdleMs = 0;  // no microbatch in flight
    double toQuietMs = 0; // the process's CPU use drops below 5% of one core
};

PauseTrial measurePause(device::Governor &gate)
{
    PauseTrial t;
    std::vector<std::pair<double, double>> samples; // (ms since pause, CPU ms)
    const auto cpuMs = [] { return std::chrono::duration<double, std::milli>(device::processCpuTime()).count(); };
    const auto start = Clock::now();
    gate.pause();
    bool idle = false;
    while (Clock::now() - start < 1500ms) {
        const double at = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        samples.emplace_back(at, cpuMs());
        if (!idle && gate.status().inFlight == 0) {
            idle = true;
            t.toIdleMs = at;
        }
        std::this_thread::sleep_for(2ms);
    }
    t.toQuietMs = -1;
    for (size_t i = 0; i < samples.size() && t.toQuietMs < 0; ++i)
        for (size_t j = i; j < samples.size(); ++j)
            if (samples[j].first - samples[i].first >= 50) {
                if (samples[j].second - samples[i].second < 0.05 * (samples[j].first - samples[i].first))
                    t.toQuietMs = samples[i].first;
                break;
            }
    gate.resume();
    return t;
}

void benchPause(const std::shared_ptr<const data::ImageDataset> &data, bench::BenchReport &report, bool quick)
{
    device::Governor gate(capped(100), benchEnvironment(true));
    auto trainer = makeTrainer(data);
    std::atomic<int64_t> steps{0};
    std::atomic<double> stepMs{0};
    std::thread worker([&] {
        device::applyThreadConfig(gate.threadConfig());
        while (gate.enter()) {
            const auto start = Clock::now();
            trainer->step();
            const auto busy = Clock::now() - start;
            gate.leave(busy);
            stepMs = std::chrono::duration<double, std::milli>(busy).count();
            ++steps;
        }
    });
    PauseTrial worst;
    const int trials = quick ? 3 : 8;
    bool resumed = true;
    for (int i = 0; i < trials; ++i) {
        std::this_thread::sleep_for(700ms);
        const PauseTrial t = measurePause(gate);
        worst.toIdleMs = std::max(worst.toIdleMs, t.toIdleMs);
        worst.toQuietMs = t.toQuietMs < 0 ? 1e9 : std::max(worst.toQuietMs, t.toQuietMs);
        const int64_t before = steps;
        std::this_thread::sleep_for(300ms);
        resumed = resumed && steps > before;
    }
    gate.close("stopped: end of benchmark");
    worker.join();
    std::printf("  pause: worst of %d: no microbatch in flight after %.1f ms, CPU quiet after %.1f ms "
                "(a step takes %.1f ms)\n",
                trials, worst.toIdleMs, worst.toQuietMs, stepMs.load());
    report.add("pause_to_idle_ms", worst.toIdleMs);
    report.add("pause_to_no_compute_ms", worst.toQuietMs);
    report.add("pause_under_1s", worst.toQuietMs < 1000 ? 1.0 : 0.0);
    report.add("resumes_after_pause", resumed ? 1.0 : 0.0);
    report.add("step_ms", stepMs.load());
}

void benchMemory(const std::shared_ptr<const data::ImageDataset> &data, bench::BenchReport &report)
{
    constexpr uint64_t kMiB = 1 << 20;
    constexpr uint64_t kGrowth = 4 * kMiB; // per microbatch, like a leak or a growing cache
    auto trainer = makeTrainer(data);
    trainer->step();
    const uint64_t start = device::residentBytes();
    auto settings = capped(100);
    settings.memoryCapMiB = int64_t(start / kMiB) + 64;
    device::Governor gate(settings, benchEnvironment(true));
    const uint64_t cap = uint64_t(settings.memoryCapMiB) * kMiB;

    bool refused = false;
    try {
        gate.checkFits(128 * kMiB, "a 128 MiB job");
    } catch (const Error &) {
        refused = true;
    }
    std::list<std::vector<char>> ballast;
    uint64_t lastAdmitted = 0;
    int steps = 0;
    while (gate.enter() && steps < 1000) {
        lastAdmitted = device::residentBytes();
        trainer->step();
        ballast.emplace_back(kGrowth, char(1)); // touched, so it is resident
        gate.leave(1ms);
        ++steps;
    }
    const uint64_t atStop = device::residentBytes();
    const bool honoured = refused && lastAdmitted <= cap && atStop > cap && steps < 1000;
    std::printf("  memory: cap %.0f MiB, last microbatch admitted at %.0f MiB, stopped at %.0f MiB after %d steps; "
                "128 MiB job %s\n",
                double(cap) / kMiB, double(lastAdmitted) / kMiB, double(atStop) / kMiB, steps,
                refused ? "refused" : "NOT refused");
    report.add("memory_cap_mib", double(cap) / kMiB);
    report.add("memory_last_admitted_mib", double(lastAdmitted) / kMiB);
    report.add("memory_at_stop_mib", double(atStop) / kMiB);
    report.add("memory_cap_honoured", honoured ? 1.0 : 0.0);
}

} // namespace

int main(int argc, char **argv)
{
    const auto opts = bench::parseBenchOptions(
        argc, argv, "bench_governor", "The governor's CPU cap, pause latency and memory cap on real training.");
    bench::BenchReport report("bench_governor", opts.quick);
    const double perCap = opts.quick ? 4 : 20;
    const int cores = device::allowedCores();
    auto data =
        std::make_shared<data::ImageDataset>(data::loadFashionMnist(defaultFashionMnistDir(), data::Split::Train));
    device::applyThreadConfig(device::defaultThreadConfig(cores));
    auto trainer = makeTrainer(data);
    for (int i = 0; i < 30; ++i)
        trainer->step();
    std::printf("%d cores allowed, %.0f s per cap; CPU fraction = process CPU time / (wall time x %d)\n", cores, perCap,
                cores);

    const CapRun full = trainUnderCap(*trainer, 100, true, perCap / 2, cores);
    std::printf("  uncapped:  %5.1f%% CPU, %6.1f steps/s\n", full.cpuPercent, full.stepsPerSecond);
    report.add("uncapped_cpu_percent", full.cpuPercent);
    double worst = 0, worstBusy = 0, halfSpeed = 0;
    for (int cap : {25, 50, 75}) {
        const CapRun measured = trainUnderCap(*trainer, cap, true, perCap, cores);
        const CapRun busy = trainUnderCap(*trainer, cap, false, perCap, cores);
        const double error = std::fabs(measured.cpuPercent - cap), busyError = std::fabs(busy.cpuPercent - cap);
        std::printf("  cap %2d%%:   %5.1f%% CPU, %6.1f steps/s (error %.1f points); busy-time duty cycle: %5.1f%% "
                    "(error %.1f)\n",
                    cap, measured.cpuPercent, measured.stepsPerSecond, error, busy.cpuPercent, busyError);
        const std::string key = "cap" + std::to_string(cap);
        report.add(key + "_cpu_percent", measured.cpuPercent);
        report.add(key + "_steps_per_second", measured.stepsPerSecond);
        report.add(key + "_busy_duty_cycle_cpu_percent", busy.cpuPercent);
        worst = std::max(worst, error);
        worstBusy = std::max(worstBusy, busyError);
        if (cap == 50)
            halfSpeed = measured.stepsPerSecond;
    }
    report.setResult(full.stepsPerSecond, halfSpeed, "steps/s", "throughput_ratio_at_cap_50");
    report.add("max_cap_error_points", worst);
    report.add("busy_duty_cycle_max_error_points", worstBusy);

    benchPause(data, report, opts.quick);
    benchMemory(data, report);
    report.finish(opts.jsonPath);
    return 0;
}
