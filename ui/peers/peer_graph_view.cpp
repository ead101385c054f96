// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/peers/peer_graph_view.h"

#include <algorithm>
#include <cmath>

#include <QEvent>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QLabel>
#include <QPainterPath>
#include <QVBoxLayout>

#include "ui/peers/peer_layout.h"
#include "ui/peers/peer_node_item.h"
#include "ui/theme/theme.h"

namespace rookery::ui {
namespace {

constexpr int kLinkKindKey = 0; // QGraphicsItem::data key holding the link kind

QColor textColor(const QPalette &p) { return p.color(QPalette::WindowText); }

/// A pipeline link: down from below the upper node's name to the lower node's edge.
QPainterPath downward(QPointF a, QPointF b)
{
    QPainterPath path;
    const QPointF from = a + QPointF(0, PeerLayout::kNodeRadius + PeerLayout::kLabelHeight + 4);
    const QPointF to = b - QPointF(0, PeerLayout::kNodeRadius + 3);
    if (b.x() != a.x() || to.y() <= from.y())
        return path;
    path.moveTo(from);
    path.lineTo(to);
    return path;
}

/// A line from the edge of one disc to the edge of the other.
QPainterPath straight(QPointF a, QPointF b)
{
    const QPointF d = b - a;
    const double len = std::hypot(d.x(), d.y());
    QPainterPath path;
    if (len < 1)
        return path;
    const QPointF u = d / len * (PeerLayout::kNodeRadius + 3);
    path.moveTo(a + u);
    path.lineTo(b - u);
    return path;
}

/// The ring's long way round: an arc over the stage's row, clear of the names, which sit
/// under the nodes.
QPainterPath arc(QPointF a, QPointF b)
{
    // Leave and arrive at 45 degrees, away from the pipeline arrows that come in from above.
    QPainterPath path;
    const double lift = PeerLayout::kRowHeight * 0.6;
    const double side = b.x() > a.x() ? 1 : -1;
    const double edge = (PeerLayout::kNodeRadius + 3) * 0.7071;
    path.moveTo(a + QPointF(side * edge, -edge));
    path.cubicTo(a + QPointF(side * lift * 0.5, -lift), b + QPointF(-side * lift * 0.5, -lift),
                 b + QPointF(-side * edge, -edge));
    return path;
}

void addArrowHead(QPainterPath &path, QPointF tip, QPointF from)
{
    const QPointF d = tip - from;
    const double len = std::hypot(d.x(), d.y());
    if (len < 1)
        return;
    const QPointF u = d / len * 7.0, n(-u.y() * 0.6, u.x() * 0.6);
    path.moveTo(tip - u + n);
    path.lineTo(tip);
    path.lineTo(tip - u - n);
}

} // namespace

PeerGraphView::PeerGraphView(QWidget *parent)
    : QGraphicsView(parent)
    , m_scene(new QGraphicsScene(this))
{
    setScene(m_scene);
    setRenderHint(QPainter::Antialiasing);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setFrameShape(QFrame::NoFrame);
    setAccessibleName(tr("Peer graph"));
    setMinimumHeight(160);
    rebuild();
}

int PeerGraphView::linkCount(host::PeerLinkView::Kind kind) const
{
    const auto it = m_linkCounts.find(kind);
    return it == m_linkCounts.end() ? 0 : it->second;
}

std::string PeerGraphView::shapeKey(const std::vector<host::PeerView> &peers,
                                    const std::vector<host::PeerLinkView> &links)
{
    std::string key;
    for (const auto &p : peers)
        key += p.id + '\x1f' + p.name + '\x1f' + std::to_string(p.cluster) + ':' + std::to_string(p.stage) +
               (p.self ? "*" : "") + '\x1e';
    key += '\x1d';
    for (const auto &l : links)
        key += l.from + '>' + l.to + (l.kind == host::PeerLinkView::Kind::Ring ? "r" : "p") + '\x1e';
    return key;
}

void PeerGraphView::showPeers(const std::vector<host::PeerView> &peers, const std::vector<host::PeerLinkView> &links)
{
    std::string shape = shapeKey(peers, links);
    m_peers = peers;
    m_links = links;
    if (shape != m_shape) {
        m_shape = std::move(shape);
        rebuild();
        return;
    }
    for (const auto &p : peers)
        if (auto it = m_items.find(p.id); it != m_items.end())
            it->second->setPeer(p);
}

void PeerGraphView::rebuild()
{
    ++m_rebuilds;
    m_scene->clear();
    m_items.clear();
    m_linkCounts.clear();
    const QPalette pal = palette();
    setBackgroundBrush(pal.color(QPalette::Base));
    if (m_peers.empty()) {
        auto *text =
            m_scene->addSimpleText(tr("No peers yet. Join a swarm or start the local demo swarm to see it here."));
        text->setBrush(pal.color(QPalette::PlaceholderText));
        m_scene->setSceneRect(text->boundingRect().adjusted(-20, -20, 20, 20));
        m_clusterCount = 0;
        setAccessibleDescription(tr("No peers"));
        fit();
        return;
    }
    const PeerLayout layout = layoutPeers(m_peers);
    m_clusterCount = int(layout.clusters.size());
    addClusters(layout);
    const QColor ring = pal.color(QPalette::Highlight);
    for (const auto &p : m_peers) {
        auto *item = new PeerNodeItem(p, textColor(pal), ring);
        item->setPos(layout.centres.at(p.id));
        m_scene->addItem(item);
        m_items[p.id] = item;
    }
    addLinks(layout);
    m_scene->setSceneRect(layout.bounds.adjusted(-8, -8, 8, 8));
    setAccessibleDescription(tr("%n peer(s)", nullptr, int(m_peers.size())) + QStringLiteral(", ") +
                             tr("%n cluster(s)", nullptr, m_clusterCount));
    fit();
}

void PeerGraphView::addClusters(const PeerLayout &layout)
{
    const QPalette pal = palette();
    for (const auto &c : layout.clusters) {
        auto *box = m_scene->addRect(c.box, QPen(pal.color(QPalette::Mid), 1), pal.color(QPalette::AlternateBase));
        box->setZValue(0);
        auto *label = m_scene->addSimpleText(tr("Cluster %1").arg(c.id + 1));
        QFont font = label->font();
        font.setWeight(QFont::DemiBold);
        label->setFont(font);
        label->setBrush(textColor(pal));
        label->setPos(c.box.center().x() - label->boundingRect().width() / 2, 8);
        label->setZValue(1);
    }
    for (int s = 0; s < layout.stageRows; ++s) {
        auto *label = m_scene->addSimpleText(tr("Stage %1").arg(s + 1));
        label->setBrush(pal.color(QPalette::PlaceholderText));
        const QRectF r = label->boundingRect();
        label->setPos(PeerLayout::kStageLabelWidth - 10 - r.width(), PeerLayout::rowY(s) - r.height() / 2);
    }
}

void PeerGraphView::addLinks(const PeerLayout &layout)
{
    const QPalette pal = palette();
    const QColor pipeColor = pal.color(QPalette::WindowText);
    const QColor ringColor = pal.color(QPalette::Highlight);
    for (const auto &l : m_links) {
        const auto a = layout.centres.find(l.from), b = layout.centres.find(l.to);
        if (a == layout.centres.end() || b == layout.centres.end())
            continue; // a link to a peer the snapshot does not list: nothing to draw
        QPainterPath path;
        QPen pen;
        if (l.kind == host::PeerLinkView::Kind::Pipeline) {
            path = downward(a->second, b->second);
            if (path.isEmpty())
                path = straight(a->second, b->second); // not the usual shape: go the direct way
            if (!path.isEmpty())
                addArrowHead(path, path.currentPosition(), a->second);
            pen = QPen(pipeColor, 1.6);
        } else {
            const int gap = std::abs(layout.column.at(l.from) - layout.column.at(l.to));
            path = gap == 1 ? straight(a->second, b->second) : arc(a->second, b->second);
            pen = QPen(ringColor, 1.6, Qt::DashLine);
        }
        pen.setCapStyle(Qt::RoundCap);
        auto *item = m_scene->addPath(path, pen);
        item->setData(kLinkKindKey, int(l.kind));
        item->setZValue(1);
        ++m_linkCounts[l.kind];
    }
}

void PeerGraphView::fit()
{
    const QRectF scene = sceneRect();
    if (scene.isEmpty() || viewport()->width() < 10)
        return;
    // Shrink to fit, but never blow a small swarm up past its natural size.
    const double scale = std::min({1.25, viewport()->width() / scene.width(), viewport()->height() / scene.height()});
    setTransform(QTransform::fromScale(scale, scale));
    centerOn(scene.center());
}

void PeerGraphView::resizeEvent(QResizeEvent *event)
{
    QGraphicsView::resizeEvent(event);
    fit();
}

void PeerGraphView::changeEvent(QEvent *event)
{
    QGraphicsView::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        rebuild();
}

PeerGraphPanel::PeerGraphPanel(QWidget *parent)
    : QWidget(parent)
    , m_view(new PeerGraphView(this))
    , m_legend(new QLabel(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    layout->addWidget(m_view, 1);
    m_legend->setContentsMargins(8, 0, 8, 4);
    m_legend->setAccessibleName(tr("Peer graph legend"));
    layout->addWidget(m_legend);
    updateLegend();
}

void PeerGraphPanel::updateLegend()
{
    QString html;
    for (const char *state : {"training", "idle", "paused", "lost"})
        html += QStringLiteral("<span style='color:%1'>&#9679;</span>&nbsp;%2&nbsp;&nbsp;&nbsp;")
                    .arg(stateColor(state).name(), QString::fromLatin1(state));
    html += QStringLiteral("&nbsp;&#8212;&#8594;&nbsp;%1&nbsp;&nbsp;&nbsp;<span style='color:%2'>- - -</span>&nbsp;%3")
                .arg(tr("pipeline link"), palette().color(QPalette::Highlight).name(), tr("ring link (all-reduce)"));
    m_legend->setText(html);
}

void PeerGraphPanel::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        updateLegend();
}

} // namespace rookery::ui
