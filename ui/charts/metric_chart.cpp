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

constexpr qint64 kMinute = 60 * 1000;
constexpr int kMaxXTicks = 6; // "HH:mm" labels that fit a half-width chart
constexpr int kRefreshMs = 1000;

qint64 floorTo(qint64 v, qint64 step) { return v - ((v % step) + step) % step; }

/// 1, 2, 2.5 or 5 times a power of ten, at least `raw`.
double niceStep(double raw)
{
    if (raw <= 0)
        return 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * magnitude >= raw)
            return m * magnitude;
    return 10 * magnitude;
}

} // namespace

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
    m_chart->setAnimationOptions(QChart::NoAnimation); // animations would repaint for a second after each change
    m_x->setFormat(QStringLiteral("HH:mm"));
    m_y->setLabelFormat(labelFormat);
    m_y->setTickCount(5);
    const qint64 now = floorTo(QDateTime::currentMSecsSinceEpoch(), kMinute);
    m_xLo = now;
    m_xHi = now + 2 * kMinute;
    m_x->setRange(QDateTime::fromMSecsSinceEpoch(m_xLo), QDateTime::fromMSecsSinceEpoch(m_xHi));
    m_x->setTickCount(3);
    m_y->setRange(0, 1);
    setChart(m_chart);
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(180);
    setFocusPolicy(Qt::NoFocus);
    setAccessibleName(title);
    applyColors();
    m_refresh.setInterval(kRefreshMs);
    connect(&m_refresh, &QTimer::timeout, this, &MetricChart::refresh);
    m_refresh.start();
}

QString MetricChart::title() const { return m_chart->title(); }

void MetricChart::setHeadline(const QString &value)
{
    m_headline = value;
    m_dirty = true;
}

void MetricChart::addPoint(qint64 timeMs, double value)
{
    if (!std::isfinite(value))
        return;
    const bool first = m_points.isEmpty();
    if (!first && m_binMs > 0 && timeMs - qint64(m_points.back().x()) < m_binMs) {
        QPointF &last = m_points.back(); // a running mean, at the bin's first time
        last.setY((last.y() * m_binCount + value) / (m_binCount + 1));
        ++m_binCount;
    } else {
        m_points.append(QPointF(double(timeMs), value));
        m_binCount = 1;
    }
    const double oldest = double(timeMs - m_windowMs);
    const auto kept = std::find_if(m_points.begin(), m_points.end(), [&](const QPointF &p) { return p.x() >= oldest; });
    m_points.erase(m_points.begin(), kept);
    m_dirty = true;
    if (first)
        refresh(); // show the first point at once
}

void MetricChart::clearPoints()
{
    m_points.clear();
    m_binCount = 0;
    m_series->clear();
}

void MetricChart::refresh()
{
    if (!m_dirty)
        return;
    m_dirty = false;
    const QString title = m_headline.isEmpty() ? m_title : m_title + QStringLiteral(" · ") + m_headline;
    if (m_chart->title() != title) {
        m_chart->setTitle(title);
        setAccessibleDescription(m_headline);
    }
    if (m_points.isEmpty())
        return;
    m_series->replace(m_points);
    rescaleX();
    rescaleY();
}

void MetricChart::rescaleX()
{
    // Whole minutes, a tick every d minutes: the axis changes once a minute at most.
    const qint64 lo = floorTo(qint64(m_points.front().x()), kMinute);
    const qint64 last = qint64(m_points.back().x());
    qint64 minutes = std::max<qint64>(2, (floorTo(last, kMinute) + kMinute - lo) / kMinute);
    qint64 per = 1;
    while (minutes / per + (minutes % per ? 1 : 0) + 1 > kMaxXTicks)
        ++per;
    minutes = (minutes + per - 1) / per * per;
    const qint64 hi = lo + minutes * kMinute;
    if (lo == m_xLo && hi == m_xHi)
        return;
    m_xLo = lo;
    m_xHi = hi;
    m_x->setTickCount(int(minutes / per) + 1);
    m_x->setRange(QDateTime::fromMSecsSinceEpoch(lo), QDateTime::fromMSecsSinceEpoch(hi));
}

void MetricChart::rescaleY()
{
    double lo = m_points.front().y(), hi = lo;
    for (const QPointF &p : m_points) {
        lo = std::min(lo, p.y());
        hi = std::max(hi, p.y());
    }
    if (m_range == YRange::FromZero)
        lo = 0;
    if (hi - lo < 1e-9)
        hi = lo + (lo == 0 ? 1 : std::abs(lo) * 0.1); // a flat line still gets a readable axis
    // Keep the axis while the data fit it and fill a fair part of it.
    const bool fits = lo >= m_yLo && hi <= m_yHi;
    const bool roomy = (hi - lo) < 0.4 * (m_yHi - m_yLo);
    if (fits && !roomy)
        return;
    const double pad = std::max((hi - lo) * 0.1, std::abs(hi) * 0.05 + 1e-9);
    hi += pad;
    if (m_range == YRange::FollowData)
        lo = std::max(0.0, lo - pad);
    const double step = niceStep((hi - lo) / 4);
    m_yLo = std::floor(lo / step) * step;
    m_yHi = std::ceil(hi / step) * step;
    m_y->setTickCount(int(std::lround((m_yHi - m_yLo) / step)) + 1);
    m_y->setRange(m_yLo, m_yHi);
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
