// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <deque>

#include <QAbstractTableModel>
#include <QList>

#include "engine/host/engine_snapshot.h"

namespace rookery::ui {

/// The event log's rows: time, level, area, message. Bounded: past `capacity` rows the
/// oldest go first, so a chatty engine cannot grow the app without limit.
///
/// Thread safety: UI thread.
class EventLogModel : public QAbstractTableModel
{
    Q_OBJECT

public:
    enum Column { TimeColumn, LevelColumn, AreaColumn, MessageColumn, ColumnCount };
    /// The level as an int (EngineEvent::Level), for the filter.
    static constexpr int LevelRole = Qt::UserRole + 1;

    explicit EventLogModel(int capacity = 5000, QObject *parent = nullptr);

    void append(const QList<host::EngineEvent> &events);
    /// A line from the app itself (area "app").
    void appendApp(host::EngineEvent::Level level, const QString &message);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString levelName(host::EngineEvent::Level level);

private:
    int m_capacity;
    std::deque<host::EngineEvent> m_rows;
};

} // namespace rookery::ui
