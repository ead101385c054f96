// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/cards/assignment_card.h"

#include <QLabel>

#include "ui/bridge/engine_types.h"

namespace rookery::ui {

AssignmentCard::AssignmentCard(QWidget *parent)
    : Card(tr("Assignment"), parent)
    , m_swarm(addRow(tr("Swarm")))
    , m_cluster(addRow(tr("Cluster")))
    , m_stage(addRow(tr("Stage")))
    , m_role(addRow(tr("Role")))
    , m_model(addRow(tr("Model")))
    , m_layers(addRow(tr("Layers")))
    , m_reach(addRow(tr("Peers reach it")))
{
    m_reach->setWordWrap(true);
}

void AssignmentCard::showAssignment(const host::AssignmentView &a)
{
    const QString dash = QStringLiteral("–");
    const bool idle = a.mode.empty() || a.mode == "idle";
    setNote(idle ? tr("Not training. Choose Start to join a swarm or start the local demo swarm.") : QString());
    // A join string ends in its 64-digit pin, which says nothing to a person and, as one
    // unbreakable word, would widen the card past its column.
    const QString swarm = toQString(a.swarm);
    m_swarm->setText(idle ? tr("none") : (swarm.isEmpty() ? dash : swarm.section(QLatin1Char('#'), 0, 0)));
    m_swarm->setToolTip(swarm);
    m_cluster->setText(a.cluster >= 0 ? tr("%1 of %2").arg(a.cluster + 1).arg(a.clusterCount) : dash);
    m_stage->setText(a.stage >= 0 ? tr("%1 of %2").arg(a.stage + 1).arg(a.stageCount) : dash);
    m_role->setText(a.role.empty() ? dash : toQString(a.role));
    m_model->setText(a.model.empty() ? dash : toQString(a.model));
    QStringList layers;
    for (const auto &l : a.layers)
        layers << toQString(l);
    m_layers->setText(layers.isEmpty() ? dash : layers.join(QStringLiteral(", ")));
    QString reach = dash;
    if (a.reachability == "direct")
        reach = tr("directly");
    else if (a.reachability == "checking")
        reach = tr("checking…");
    else if (a.reachability == "unreachable")
        reach = tr("not directly: %1").arg(toQString(a.reachabilityNote));
    m_reach->setText(reach);
}

} // namespace rookery::ui
