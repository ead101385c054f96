// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/peers/peer_layout.h"

#include <algorithm>

namespace rookery::ui {

PeerLayout layoutPeers(const std::vector<host::PeerView> &peers)
{
    PeerLayout out;
    // cluster -> stage -> peer ids
    std::map<int, std::map<int, std::vector<std::string>>> cells;
    for (const auto &p : peers) {
        cells[p.cluster][std::max(0, p.stage)].push_back(p.id);
        out.stageRows = std::max(out.stageRows, std::max(0, p.stage) + 1);
    }
    double x = PeerLayout::kStageLabelWidth;
    int column = 0;
    const double height = PeerLayout::kHeader + PeerLayout::kRowHeight * out.stageRows + 8;
    for (auto &[clusterId, stages] : cells) {
        size_t widest = 1;
        for (auto &[stage, ids] : stages) {
            std::sort(ids.begin(), ids.end());
            widest = std::max(widest, ids.size());
        }
        const double width = PeerLayout::kCellWidth * double(widest);
        for (const auto &[stage, ids] : stages) {
            // Centre the cell's peers within the column.
            const double start = x + (width - PeerLayout::kCellWidth * double(ids.size())) / 2;
            for (size_t i = 0; i < ids.size(); ++i) {
                out.centres[ids[i]] =
                    QPointF(start + PeerLayout::kCellWidth * (double(i) + 0.5), PeerLayout::rowY(stage));
                out.column[ids[i]] = column;
            }
        }
        out.clusters.push_back({clusterId, QRectF(x, 0, width, height)});
        x += width + PeerLayout::kClusterGap;
        ++column;
    }
    const double right = out.clusters.empty() ? x : out.clusters.back().box.right();
    out.bounds = QRectF(0, 0, right, height);
    return out;
}

} // namespace rookery::ui
