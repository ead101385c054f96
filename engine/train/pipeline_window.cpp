// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/pipeline_window.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rookery::train {

int pipelineWindow(const WindowInputs &in)
{
    const int floor = std::max(1, in.stages + 1);
    const int cap = std::max(floor, in.cap);
    if (!(in.bottleneckSeconds > 0) || !std::isfinite(in.bottleneckSeconds))
        return floor;
    const double trip = std::max(0.0, in.roundTripSeconds) + std::max(0.0, in.stageSecondsSum);
    // A hair below ceil: 2.0000000001 microbatches' worth of time is 2, not 3.
    const double needed = std::ceil(trip / in.bottleneckSeconds - 1e-9);
    if (!std::isfinite(needed) || needed >= double(cap))
        return cap;
    return std::clamp(int(needed), floor, cap);
}

void WindowSizer::reset() { *this = WindowSizer(); }

void WindowSizer::sent(Clock::time_point at) { m_sentAt.push_back(at); }

void WindowSizer::arrived(Clock::time_point at)
{
    if (m_lastArrival)
        m_gaps.push_back(std::chrono::duration<double>(at - *m_lastArrival).count());
    if (m_gaps.size() > 31)
        m_gaps.pop_front();
    m_lastArrival = at;
    if (m_sentAt.empty())
        return;
    const double trip = std::chrono::duration<double>(at - m_sentAt.front()).count();
    m_minTripSeconds = m_minTripSeconds < 0 ? trip : std::min(m_minTripSeconds, trip);
    m_sentAt.pop_front();
}

int WindowSizer::size(int fixed, double ownSeconds, int stages, int cap) const
{
    if (cap <= fixed || m_minTripSeconds < 0)
        return fixed;
    double bottleneck = ownSeconds;
    if (m_gaps.size() >= 5) {
        std::vector<double> g(m_gaps.begin(), m_gaps.end());
        std::nth_element(g.begin(), g.begin() + std::ptrdiff_t(g.size() / 2), g.end());
        bottleneck = std::max(ownSeconds, g[g.size() / 2]);
    }
    return std::max(fixed, pipelineWindow({m_minTripSeconds, ownSeconds, bottleneck, stages, cap}));
}

} // namespace rookery::train
