// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/charts/metric_chart.h"

#include <algorithm>
#include <cmath>

#include <QChart>
#include <QDateTime>
#include <QDateTimeAxis>
#include <QEvent>
#include <QLineSeries>
#include <QPen>
#include <QValueAxis>

#include "ui/theme/theme.h"

namespace rookery::ui {
namespace {
constexpr qint64 kMinSpanMs = 2 * 60 * 1000; // the x axis spans at least two minutes
}

MetricChart::MetricChart(const QString &title, int colorIndex, YRange range, const QString &labelFormat,
                         QWidget *parent)
    : QChartView(parent)
    , m_title(title)
    , m_colorIndex(colorIndex)
    , m_range(range)
    , m_chart(new QChart)
    , m_series(new QLineSeries)
    , m_x(new QDateTimeAxis)
    , m_y(new QValueAxis)
{
    m_chart->addSeries(m_series);
    m_chart->addAxis(m_x, Qt::AlignBottom);
    m_chart->addAxis(m_y, Qt::AlignLeft);
    m_series->attachAxis(m_x);
    m_series->attachAxis(m_y);
    m_chart->legend()->hide();
    m_chart->setTitle(title);
    m_chart->setMargins(QMargins(4, 2, 8, 2));
    m_chart->setBackgroundRoundness(8);
    m_chart->setAnimationOptions(QChart::NoAnimation); // animations would repaint for 1 s after each point
    m_x->setFormat(QStringLiteral("HH:mm"));
    m_x->setTickCount(5);
    m_y->setLabelFormat(labelFormat);
    m_y->setTickCount(5);
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    m_x->setRange(QDateTime::fromMSecsSinceEpoch(now), QDateTime::fromMSecsSinceEpoch(now + kMinSpanMs));
    m_y->setRange(0, 1);
    setChart(m_chart);
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(180);
    setFocusPolicy(Qt::NoFocus);
    setAccessibleName(title);
    applyColors();
}

QString MetricChart::title() const { return m_chart->title(); }

void MetricChart::setHeadline(const QString &value)
{
    m_chart->setTitle(value.isEmpty() ? m_title : m_title + QStringLiteral(" · ") + value);
    setAccessibleDescription(value);
}

void MetricChart::addPoint(qint64 timeMs, double value)
{
    if (!std::isfinite(value))
        return;
    m_points.append(QPointF(double(timeMs), value));
    const double oldest = double(timeMs - m_windowMs);
    const auto firstKept =
        std::find_if(m_points.begin(), m_points.end(), [&](const QPointF &p) { return p.x() >= oldest; });
    m_points.erase(m_points.begin(), firstKept);
    m_series->replace(m_points); // one repaint, not one per point
    rescale();
}

void MetricChart::clearPoints()
{
    m_points.clear();
    m_series->clear();
}

void MetricChart::rescale()
{
    const qint64 first = qint64(m_points.front().x());
    const qint64 last = qint64(m_points.back().x());
    m_x->setRange(QDateTime::fromMSecsSinceEpoch(first),
                  QDateTime::fromMSecsSinceEpoch(std::max(last, first + kMinSpanMs)));
    m_x->setFormat(last - first < 3 * 60 * 1000 ? QStringLiteral("HH:mm:ss") : QStringLiteral("HH:mm"));
    double lo = m_points.front().y(), hi = lo;
    for (const QPointF &p : m_points) {
        lo = std::min(lo, p.y());
        hi = std::max(hi, p.y());
    }
    if (m_range == YRange::FromZero)
        lo = 0;
    const double pad = std::max((hi - lo) * 0.1, std::abs(hi) * 0.05 + 1e-6);
    m_y->setRange(m_range == YRange::FromZero ? 0.0 : std::max(0.0, lo - pad), hi + pad);
    m_y->applyNiceNumbers();
}

void MetricChart::applyColors()
{
    const QPalette p = palette();
    m_chart->setBackgroundBrush(p.color(QPalette::Base));
    m_chart->setBackgroundPen(QPen(p.color(QPalette::Midlight)));
    m_chart->setTitleBrush(p.color(QPalette::WindowText));
    QFont titleFont = font();
    titleFont.setWeight(QFont::DemiBold);
    m_chart->setTitleFont(titleFont);
    for (QAbstractAxis *axis : {static_cast<QAbstractAxis *>(m_x), static_cast<QAbstractAxis *>(m_y)}) {
        axis->setLabelsBrush(p.color(QPalette::WindowText));
        axis->setLinePenColor(p.color(QPalette::Mid));
        axis->setGridLineColor(p.color(QPalette::Midlight));
        QFont small = font();
        small.setPointSizeF(small.pointSizeF() * 0.85);
        axis->setLabelsFont(small);
    }
    QPen pen(seriesColor(m_colorIndex));
    pen.setWidthF(2.0);
    m_series->setPen(pen);
    setBackgroundBrush(p.color(QPalette::Window));
}

void MetricChart::changeEvent(QEvent *event)
{
    if (event->type() == QEvent::PaletteChange)
        applyColors();
    QChartView::changeEvent(event);
}

} // namespace rookery::ui
