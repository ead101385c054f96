// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/straggler_watch.h"

#include <algorithm>
#include <cmath>

namespace rookery::coord {

namespace {

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    if (n == 0)
        return 0;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

std::vector<Straggler> StragglerWatch::check(const std::vector<StageSpeed> &speeds, Clock::time_point now)
{
    std::map<std::string, std::vector<std::pair<const StageSpeed *, double>>> groups; // with their ratios
    for (const auto &s : speeds)
        if (std::isfinite(s.predicted) && std::isfinite(s.measured) && s.predicted > 0 && s.measured > 0)
            groups[s.group].emplace_back(&s, s.measured / s.predicted);
    std::vector<Straggler> out;
    std::map<std::string, int> slow;
    for (const auto &[group, measured] : groups) {
        std::vector<double> ratios;
        for (const auto &[s, r] : measured)
            ratios.push_back(r);
        const bool alone = measured.size() < m_settings.minimumStages;
        const double groupUsual = median(ratios);
        for (const auto &[s, r] : measured) {
            if (const auto q = m_quietUntil.find(s->nodeId); q != m_quietUntil.end()) {
                if (now < q->second)
                    continue;
                m_quietUntil.erase(q);
            }
            double usual = groupUsual;
            if (alone) {
                // Its own usual, learnt over its first checks at these layers.
                OwnHistory &h = m_own[s->nodeId];
                if (h.group != group)
                    h = {group, {}};
                if (int(h.early.size()) < m_settings.baselineChecks) {
                    h.early.push_back(r);
                    continue;
                }
                usual = median(h.early);
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
            m_own.erase(s->nodeId); // re-cut and recalibrated: its own usual is learnt again
        }
    }
    m_slowChecks = std::move(slow); // a check that was not slow breaks the run
    // Who is not measured now (paused, gone, re-planned) learns its usual again later.
    for (auto it = m_own.begin(); it != m_own.end();)
        it = groups.count(it->second.group) &&
                     std::any_of(groups.at(it->second.group).begin(), groups.at(it->second.group).end(),
                                 [&](const auto &m) { return m.first->nodeId == it->first; })
                 ? std::next(it)
                 : m_own.erase(it);
    return out;
}

} // namespace rookery::coord
