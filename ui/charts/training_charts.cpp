// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/charts/training_charts.h"

#include <QHBoxLayout>

#include "engine/common/format.h"
#include "ui/bridge/engine_types.h"
#include "ui/charts/metric_chart.h"

namespace rookery::ui {

TrainingCharts::TrainingCharts(QWidget *parent)
    : QWidget(parent)
    , m_throughput(
          new MetricChart(tr("Throughput (samples/s)"), 0, MetricChart::YRange::FromZero, QStringLiteral("%.0f"), this))
    , m_loss(new MetricChart(tr("Training loss"), 1, MetricChart::YRange::FollowData, QStringLiteral("%.2f"), this))
{
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(10);
    layout->addWidget(m_throughput);
    layout->addWidget(m_loss);
}

void TrainingCharts::showSnapshot(const host::EngineSnapshot &s, qint64 nowMs)
{
    if (!s.running) {
        m_lastStep = -1;
        return;
    }
    const auto &t = s.training;
    m_throughput->addPoint(nowMs, t.samplesPerSecond);
    m_throughput->setHeadline(toQString(format::count(int64_t(t.samplesPerSecond + 0.5))));
    // A paused trainer repeats its last loss; plot it only when a step was taken. A
    // swarm stage that does not compute the loss (all but the leaf) may report none (0).
    if (t.step > 0 && t.step != m_lastStep && t.loss > 0) {
        m_loss->addPoint(nowMs, t.loss);
        m_loss->setHeadline(QString::number(t.loss, 'f', 3));
    }
    m_lastStep = t.step;
}

} // namespace rookery::ui
