// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>
#include <vector>

#include <QPointF>
#include <QRectF>

#include "engine/host/engine_snapshot.h"

namespace rookery::ui {

/// Where the peer graph draws things, in scene units: one column per cluster (a labelled
/// box), one row per pipeline stage, peers that share a stage of a cluster side by side.
/// Pipeline links then run down a column and ring links across a row.
struct PeerLayout
{
    static constexpr double kNodeRadius = 17;
    static constexpr double kCellWidth = 150;
    static constexpr double kRowHeight = 96;
    static constexpr double kHeader = 44;
    static constexpr double kClusterGap = 44;
    static constexpr double kStageLabelWidth = 72;
    static constexpr double kLabelHeight = 18; ///< the name under a node

    struct Cluster
    {
        int id = 0;
        QRectF box;
    };

    std::map<std::string, QPointF> centres; ///< peer id -> centre of its node
    std::map<std::string, int> column;      ///< peer id -> cluster column (0, 1, ...)
    std::vector<Cluster> clusters;          ///< in column order
    int stageRows = 0;
    QRectF bounds;

    /// The y of a stage's row centre.
    static double rowY(int stage) { return kHeader + kRowHeight * (stage + 0.5); }
};

/// Lays out `peers` (any order); clusters sorted by id, peers in a cell by id.
PeerLayout layoutPeers(const std::vector<host::PeerView> &peers);

} // namespace rookery::ui
