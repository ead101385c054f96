// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QChartView>
#include <QList>
#include <QPointF>
#include <QTimer>

class QChart;
class QDateTimeAxis;
class QLineSeries;
class QValueAxis;

namespace rookery::ui {

/// One live line chart over wall-clock time (samples/s, loss). Points are averaged into
/// bins (2 s by default) and the last window (10 minutes) is kept. Qt Charts lays the
/// whole chart out again whenever an axis or the title changes, which costs
/// milliseconds, so the chart redraws at most once a second and moves its axes in whole
/// steps (minutes on x; nice numbers on y, only when the data leave them).
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
    /// Points closer than this are averaged into one (0: keep every point).
    void setBinMs(qint64 binMs) { m_binMs = binMs; }
    /// "1,234": the newest value, shown in the title.
    void setHeadline(const QString &value);
    /// Draws what was added now instead of at the next refresh.
    void refresh();

    const QList<QPointF> &points() const { return m_points; }
    QString title() const;

protected:
    void changeEvent(QEvent *event) override;

private:
    void rescaleX();
    void rescaleY();
    void applyColors();

    QString m_title;
    QString m_headline;
    int m_colorIndex;
    YRange m_range;
    qint64 m_windowMs = 10 * 60 * 1000;
    qint64 m_binMs = 2000;
    int m_binCount = 0; ///< points averaged into the last one
    QChart *m_chart;
    QLineSeries *m_series;
    QDateTimeAxis *m_x;
    QValueAxis *m_y;
    QList<QPointF> m_points;
    QTimer m_refresh;
    bool m_dirty = false;
    qint64 m_xLo = 0, m_xHi = 0;
    double m_yLo = 0, m_yHi = 0;
};

} // namespace rookery::ui
