// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/cards/assignment_card.h"

#include <QLabel>

#include "ui/bridge/engine_types.h"

namespace rookery::ui {

AssignmentCard::AssignmentCard(QWidget *parent)
    : Card(tr("Assignment"), parent)
    , m_swarm(addRow(tr("Swarm")))
    , m_job(addRow(tr("Job")))
    , m_cluster(addRow(tr("Cluster")))
    , m_stage(addRow(tr("Stage")))
    , m_role(addRow(tr("Role")))
    , m_model(addRow(tr("Model")))
    , m_share(addRow(tr("Holds")))
    , m_layers(addRow(tr("Layers")))
    , m_reach(addRow(tr("Peers reach it")))
{
    m_reach->setWordWrap(true);
    m_share->setWordWrap(true);
}

namespace {

// 25,300,000 -> "25.3M"; 640,000 -> "640k".
QString parameters(int64_t n)
{
    if (n >= 1'000'000)
        return QString::number(double(n) / 1e6, 'f', 1) + QLatin1Char('M');
    if (n >= 1'000)
        return QString::number(double(n) / 1e3, 'f', 0) + QLatin1Char('k');
    return QString::number(n);
}

QString mebibytes(uint64_t bytes) { return QString::number(double(bytes) / double(1 << 20), 'f', 0); }

} // namespace

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
    m_job->setText(a.job.empty() ? dash : toQString(a.job));
    QString model = a.model.empty() ? dash : toQString(a.model);
    if (!a.model.empty() && a.modelParameters > 0)
        model = tr("%1, %2 layers, %3 parameters").arg(model).arg(a.modelLayers).arg(parameters(a.modelParameters));
    m_model->setText(model);
    QString share = dash;
    if (a.stage >= 0 && a.stageParameters > 0 && a.modelParameters > 0) {
        share = (a.layers.size() == 1 ? tr("1 layer") : tr("%1 layers").arg(a.layers.size())) +
                tr(", %1 parameters (%2%)")
                    .arg(parameters(a.stageParameters))
                    .arg(QString::number(100.0 * double(a.stageParameters) / double(a.modelParameters), 'f', 0));
        if (a.stageMemoryBytes > 0)
            share += tr(", %1 MiB of memory planned").arg(mebibytes(a.stageMemoryBytes));
    }
    m_share->setText(share);
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
