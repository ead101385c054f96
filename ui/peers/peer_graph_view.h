// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>
#include <vector>

#include <QGraphicsView>

#include "engine/host/engine_snapshot.h"

class QGraphicsScene;
class QLabel;

namespace rookery::ui {

class PeerNodeItem;
struct PeerLayout;

/// The swarm as a graph: clusters as labelled boxes, pipeline links down each cluster,
/// dashed ring links between holders of the same stage in different clusters, each peer
/// coloured by its state with its throughput on hover. The scene is rebuilt only when
/// the swarm's shape changes; otherwise the peers' colours and tooltips are updated.
///
/// Thread safety: UI thread.
class PeerGraphView : public QGraphicsView
{
    Q_OBJECT

public:
    explicit PeerGraphView(QWidget *parent = nullptr);

    void showPeers(const std::vector<host::PeerView> &peers, const std::vector<host::PeerLinkView> &links);

    const std::map<std::string, PeerNodeItem *> &peerItems() const { return m_items; }
    int linkCount(host::PeerLinkView::Kind kind) const;
    int clusterCount() const { return m_clusterCount; }
    /// How many times the scene was rebuilt (tests check updates do not rebuild).
    int rebuildCount() const { return m_rebuilds; }

protected:
    void resizeEvent(QResizeEvent *event) override;
    void changeEvent(QEvent *event) override;

private:
    void rebuild();
    void addClusters(const PeerLayout &layout);
    void addLinks(const PeerLayout &layout);
    void fit();
    static std::string shapeKey(const std::vector<host::PeerView> &peers, const std::vector<host::PeerLinkView> &links);

    QGraphicsScene *m_scene;
    std::vector<host::PeerView> m_peers;
    std::vector<host::PeerLinkView> m_links;
    std::string m_shape;
    std::map<std::string, PeerNodeItem *> m_items;
    std::map<host::PeerLinkView::Kind, int> m_linkCounts;
    int m_clusterCount = 0;
    int m_rebuilds = 0;
};

/// The graph with its legend underneath.
class PeerGraphPanel : public QWidget
{
    Q_OBJECT

public:
    explicit PeerGraphPanel(QWidget *parent = nullptr);
    PeerGraphView *view() const { return m_view; }

protected:
    void changeEvent(QEvent *event) override;

private:
    void updateLegend();
    PeerGraphView *m_view;
    QLabel *m_legend;
};

} // namespace rookery::ui
