// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/straggler_watch.h"

#include <algorithm>
#include <cmath>

namespace rookery::coord {

std::vector<Straggler> StragglerWatch::check(const std::vector<StageSpeed> &speeds, Clock::time_point now)
{
    std::map<std::string, std::vector<std::pair<const StageSpeed *, double>>> groups; // with their ratios
    for (const auto &s : speeds)
        if (std::isfinite(s.predicted) && std::isfinite(s.measured) && s.predicted > 0 && s.measured > 0)
            groups[s.group].emplace_back(&s, s.measured / s.predicted);
    std::vector<Straggler> out;
    std::map<std::string, int> slow;
    for (const auto &[group, measured] : groups) {
        if (measured.size() < m_settings.minimumStages)
            continue;
        std::vector<double> ratios;
        for (const auto &[s, r] : measured)
            ratios.push_back(r);
        std::sort(ratios.begin(), ratios.end());
        const size_t n = ratios.size();
        const double usual = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
        for (const auto &[s, r] : measured) {
            if (const auto q = m_quietUntil.find(s->nodeId); q != m_quietUntil.end()) {
                if (now < q->second)
                    continue;
                m_quietUntil.erase(q);
            }
            if (r * m_settings.threshold >= usual)
                continue;
            const int count = (m_slowChecks.count(s->nodeId) ? m_slowChecks.at(s->nodeId) : 0) + 1;
            if (count < m_settings.checks) {
                slow[s->nodeId] = count;
                continue;
            }
            out.push_back({s->nodeId, r / usual});
            m_quietUntil[s->nodeId] = now + m_settings.cooldown;
        }
    }
    m_slowChecks = std::move(slow); // a check that was not slow breaks the run
    return out;
}

} // namespace rookery::coord
