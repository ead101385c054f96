// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

#include "engine/host/engine_snapshot.h"

namespace rookery::ui {

class MetricChart;

/// The live charts side by side: throughput (samples/s) and training loss. One point per
/// new snapshot while training runs, never one per batch.
///
/// Thread safety: UI thread.
class TrainingCharts : public QWidget
{
    Q_OBJECT

public:
    explicit TrainingCharts(QWidget *parent = nullptr);

    /// Adds the snapshot's figures as of `nowMs` (wall clock) if training runs.
    void showSnapshot(const host::EngineSnapshot &snapshot, qint64 nowMs);

    MetricChart *throughputChart() const { return m_throughput; }
    MetricChart *lossChart() const { return m_loss; }

private:
    MetricChart *m_throughput;
    MetricChart *m_loss;
    int64_t m_lastStep = -1;
};

} // namespace rookery::ui
