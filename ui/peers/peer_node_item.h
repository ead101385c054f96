// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QBrush>
#include <QGraphicsEllipseItem>

#include "engine/host/engine_snapshot.h"

class QGraphicsSimpleTextItem;

namespace rookery::ui {

/// One peer in the graph: a disc in its state's colour, its name underneath, and a
/// tooltip with its state and throughput. This computer gets a highlighted ring.
///
/// Thread safety: UI thread.
class PeerNodeItem : public QGraphicsEllipseItem
{
public:
    enum { Type = UserType + 1 };

    PeerNodeItem(const host::PeerView &peer, const QColor &textColor, const QColor &ringColor);

    int type() const override { return Type; }
    /// Updates colour and tooltip (structure unchanged).
    void setPeer(const host::PeerView &peer);
    const host::PeerView &peer() const { return m_peer; }
    QColor fillColor() const { return brush().color(); }

private:
    host::PeerView m_peer;
    QGraphicsSimpleTextItem *m_label;
};

} // namespace rookery::ui
