// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>

namespace rookery::device {

/// The door every compute thread passes before each microbatch. The resource governor
/// implements it: it holds threads while work must not run (paused, snoozed, on
/// battery, outside the schedule, user active under run-only-when-idle) and spaces
/// microbatches out to honour the CPU-time cap. A change of settings therefore takes
/// effect within one microbatch, and a pause never interrupts a microbatch.
///
/// Thread safety: enter() and leave() are called concurrently from any number of
/// compute threads.
class WorkGate
{
public:
    virtual ~WorkGate() = default;

    /// Blocks until this thread may run one microbatch. Returns false when the caller
    /// should wind down instead (the gate is closing for good: shutdown, or the memory
    /// cap was crossed), after which it returns false at once forever.
    virtual bool enter() = 0;

    /// Reports the microbatch that enter() let through as finished, with how long it
    /// kept the thread busy.
    virtual void leave(std::chrono::nanoseconds busy) = 0;

    /// The share of its cores' time the gate lets compute run, in (0, 1]: a CPU-time cap
    /// of 25% gives 0.25. Compute time over this share is how long work takes under the
    /// gate's spacing, whatever else the machine runs (the straggler check's measure).
    virtual double cpuShare() { return 1.0; }
};

/// A gate that never holds anyone back: for tests and benchmarks of raw speed.
class OpenGate final : public WorkGate
{
public:
    bool enter() override { return true; }
    void leave(std::chrono::nanoseconds) override { }
};

} // namespace rookery::device
