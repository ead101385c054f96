// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/claim_watch.h"

#include <cmath>

namespace rookery::coord {

std::vector<Overclaim> ClaimWatch::check(const std::vector<StageSpeed> &speeds)
{
    std::vector<Overclaim> out;
    std::map<std::string, int> low;
    for (const auto &s : speeds) {
        if (!std::isfinite(s.predicted) || !std::isfinite(s.measured) || s.predicted <= 0 || s.measured <= 0 ||
            !(s.flops >= m_settings.minimumFlops))
            continue;
        if (s.measured * m_settings.ratio >= s.predicted || m_reported.count(s.nodeId))
            continue;
        const auto it = m_lowChecks.find(s.nodeId);
        const int count = (it == m_lowChecks.end() ? 0 : it->second) + 1;
        if (count < m_settings.checks) {
            low[s.nodeId] = count;
            continue;
        }
        m_reported.insert(s.nodeId);
        out.push_back({s.nodeId, s.predicted, s.measured});
    }
    m_lowChecks = std::move(low); // a check that was not low (or not measured) ends the run
    return out;
}

} // namespace rookery::coord
