// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <deque>
#include <optional>

namespace rookery::train {

/// A node's default cap on microbatches in flight (AssignedStageConfig::maxWindow):
/// accuracy suffers beyond about 5 (bench_wan).
constexpr int kDefaultMaxWindow = 5;

/// What the root knows when it sizes its window of microbatches in flight.
struct WindowInputs
{
    double roundTripSeconds = 0;  ///< network round trip to the leaf and back
    double stageSecondsSum = 0;   ///< one microbatch's forward + backward, summed over the stages
    double bottleneckSeconds = 0; ///< the slowest stage's forward + backward (or link's transfer)
    int stages = 1;
    int cap = 0; ///< the most microbatches in flight (the staleness cap); below stages + 1 it is ignored
};

/// How many microbatches the root keeps in flight so that the slowest stage never waits
/// for the network: one microbatch's whole trip, ceil((round trip + sum of stage
/// times) / bottleneck), at least stages + 1 (the loopback window) and at most `cap`.
/// Staleness grows with the window (about window - 1 optimizer steps at the root), which
/// is why the cap exists. With no measurement yet (bottleneck 0) it is stages + 1.
///
/// Thread safety: a pure function.
int pipelineWindow(const WindowInputs &in);

/// The root's measurements for pipelineWindow(), as its microbatches go and come back.
/// A microbatch's trip from its forward's send to its backward's arrival is the round
/// trip plus every later stage's time; its least value in a run is that without
/// queueing (more in flight than needed only queues, which would otherwise feed back
/// into a larger window). The bottleneck is the slower of the root's own time and the
/// median gap between arriving backwards: whatever is slowest downstream (a stage, a
/// link's bandwidth) spaces them, also while the window is too small (its microbatches
/// then arrive in bursts, spaced by the bottleneck, with one long gap per burst, which
/// the median ignores).
///
/// Thread safety: one thread (the root's stage thread).
class WindowSizer
{
public:
    using Clock = std::chrono::steady_clock;

    /// A new run: nothing measured.
    void reset();
    /// A forward left (backwards come back in the order of their forwards).
    void sent(Clock::time_point at);
    /// The oldest microbatch's backward arrived.
    void arrived(Clock::time_point at);
    /// The window for the next forward: `fixed` (stages + 1) until a trip is measured.
    int size(int fixed, double ownSeconds, int stages, int cap) const;

private:
    std::deque<Clock::time_point> m_sentAt; // in flight, oldest first
    double m_minTripSeconds = -1;           // -1: none yet
    std::deque<double> m_gaps;              // seconds between the last backwards' arrivals
    std::optional<Clock::time_point> m_lastArrival;
};

} // namespace rookery::train
