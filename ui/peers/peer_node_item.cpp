// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/peers/peer_node_item.h"

#include <QBrush>
#include <QFont>
#include <QFontMetrics>
#include <QGraphicsSimpleTextItem>
#include <QPen>

#include "engine/common/format.h"
#include "ui/bridge/engine_types.h"
#include "ui/peers/peer_layout.h"
#include "ui/theme/theme.h"

namespace rookery::ui {

PeerNodeItem::PeerNodeItem(const host::PeerView &peer, const QColor &textColor, const QColor &ringColor)
    : QGraphicsEllipseItem(-PeerLayout::kNodeRadius, -PeerLayout::kNodeRadius, 2 * PeerLayout::kNodeRadius,
                           2 * PeerLayout::kNodeRadius)
    , m_label(new QGraphicsSimpleTextItem(this))
{
    setAcceptHoverEvents(true);
    setZValue(2);
    QFont font;
    font.setPointSizeF(font.pointSizeF() * 0.9);
    if (peer.self)
        font.setWeight(QFont::DemiBold);
    m_label->setFont(font);
    m_label->setBrush(textColor);
    const QString name =
        toQString(peer.name.empty() ? peer.id : peer.name) + (peer.self ? QObject::tr(" (you)") : QString());
    const QString shown = QFontMetrics(font).elidedText(name, Qt::ElideMiddle, int(PeerLayout::kCellWidth) - 8);
    m_label->setText(shown);
    const QRectF r = m_label->boundingRect();
    m_label->setPos(-r.width() / 2, PeerLayout::kNodeRadius + 3);
    if (peer.self) {
        auto *ring = new QGraphicsEllipseItem(rect().adjusted(-5, -5, 5, 5), this);
        ring->setPen(QPen(ringColor, 2.5));
        ring->setBrush(Qt::NoBrush);
    }
    setPeer(peer);
}

void PeerNodeItem::setPeer(const host::PeerView &peer)
{
    m_peer = peer;
    const QColor fill = stateColor(peer.state);
    setBrush(fill);
    setPen(QPen(fill.darker(135), 1.5));
    const QString name = toQString(peer.name.empty() ? peer.id : peer.name);
    setToolTip(QObject::tr("<b>%1</b>%2<br>%3<br>Cluster %4, stage %5<br>%6 samples/s")
                   .arg(name.toHtmlEscaped(), peer.self ? QObject::tr(" (this computer)") : QString(),
                        toQString(peer.state).toHtmlEscaped())
                   .arg(peer.cluster + 1)
                   .arg(peer.stage + 1)
                   .arg(toQString(format::count(int64_t(peer.samplesPerSecond + 0.5)))));
}

} // namespace rookery::ui
