// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/cards/contribution_card.h"

#include <QGridLayout>
#include <QLabel>

#include "engine/common/format.h"
#include "ui/bridge/engine_types.h"

namespace rookery::ui {
namespace {

QLabel *figure(QWidget *parent, const QString &name)
{
    auto *label = new QLabel(QStringLiteral("0"), parent);
    QFont font = label->font();
    font.setPointSizeF(font.pointSizeF() * 1.35);
    font.setWeight(QFont::DemiBold);
    label->setFont(font);
    label->setAccessibleName(name);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

QLabel *caption(QWidget *parent, const QString &text)
{
    auto *label = new QLabel(text, parent);
    label->setObjectName(QStringLiteral("cardKey"));
    return label;
}

QString hours(double h) { return QString::number(h, 'f', h < 1 ? 3 : h < 10 ? 2 : 1); }

} // namespace

ContributionCard::ContributionCard(QWidget *parent)
    : Card(tr("Contribution"), parent)
    , m_samplesToday(figure(this, tr("Samples today")))
    , m_samplesTotal(figure(this, tr("Samples in total")))
    , m_hoursToday(figure(this, tr("Compute-hours today")))
    , m_hoursTotal(figure(this, tr("Compute-hours in total")))
{
    QGridLayout *g = grid();
    g->addWidget(caption(this, tr("Today")), 0, 1);
    g->addWidget(caption(this, tr("In total")), 0, 2);
    g->addWidget(caption(this, tr("Samples")), 1, 0);
    g->addWidget(m_samplesToday, 1, 1);
    g->addWidget(m_samplesTotal, 1, 2);
    g->addWidget(caption(this, tr("Compute-hours")), 2, 0);
    g->addWidget(m_hoursToday, 2, 1);
    g->addWidget(m_hoursTotal, 2, 2);
    g->setColumnStretch(1, 1);
    g->setColumnStretch(2, 1);
}

void ContributionCard::showContribution(const host::ContributionView &c)
{
    m_samplesToday->setText(toQString(format::count(c.samplesToday)));
    m_samplesTotal->setText(toQString(format::count(c.samplesTotal)));
    m_hoursToday->setText(hours(c.computeHoursToday));
    m_hoursTotal->setText(hours(c.computeHoursTotal));
}

} // namespace rookery::ui
