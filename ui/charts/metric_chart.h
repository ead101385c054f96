// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QChartView>
#include <QList>
#include <QPointF>

class QChart;
class QDateTimeAxis;
class QLineSeries;
class QValueAxis;

namespace rookery::ui {

/// One live line chart over wall-clock time (samples/s, loss). Keeps the points of the
/// last window (10 minutes by default); the y axis starts at zero or follows the data.
///
/// Thread safety: UI thread.
class MetricChart : public QChartView
{
    Q_OBJECT

public:
    enum class YRange { FromZero, FollowData };

    /// `labelFormat`: printf format of the y axis labels ("%.0f", "%.2f").
    MetricChart(const QString &title, int colorIndex, YRange range, const QString &labelFormat,
                QWidget *parent = nullptr);

    void addPoint(qint64 timeMs, double value);
    void clearPoints();
    void setWindowMs(qint64 windowMs) { m_windowMs = windowMs; }
    /// "Throughput · 1,234 samples/s": the title with the newest value.
    void setHeadline(const QString &value);

    const QList<QPointF> &points() const { return m_points; }
    QString title() const;

protected:
    void changeEvent(QEvent *event) override;

private:
    void rescale();
    void applyColors();

    QString m_title;
    int m_colorIndex;
    YRange m_range;
    qint64 m_windowMs = 10 * 60 * 1000;
    QChart *m_chart;
    QLineSeries *m_series;
    QDateTimeAxis *m_x;
    QValueAxis *m_y;
    QList<QPointF> m_points;
};

} // namespace rookery::ui
