// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "engine/host/engine_snapshot.h"
#include "ui/cards/card.h"

namespace rookery::ui {

/// Where this computer stands: the swarm, the job and its model, its cluster, its
/// pipeline stage and role, and its share of the model (layers, parameters, memory).
///
/// Thread safety: UI thread.
class AssignmentCard : public Card
{
    Q_OBJECT

public:
    explicit AssignmentCard(QWidget *parent = nullptr);
    void showAssignment(const host::AssignmentView &assignment);

    QLabel *stageLabel() const { return m_stage; }
    QLabel *clusterLabel() const { return m_cluster; }
    QLabel *layersLabel() const { return m_layers; }
    QLabel *reachLabel() const { return m_reach; }
    QLabel *jobLabel() const { return m_job; }
    QLabel *modelLabel() const { return m_model; }
    QLabel *shareLabel() const { return m_share; }

private:
    QLabel *m_swarm;
    QLabel *m_job;
    QLabel *m_cluster;
    QLabel *m_stage;
    QLabel *m_role;
    QLabel *m_model;
    QLabel *m_share; ///< layers, parameters and memory this computer holds
    QLabel *m_layers;
    QLabel *m_reach; ///< whether peers can dial this node, as the coordinator found
};

} // namespace rookery::ui
