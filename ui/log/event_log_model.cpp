// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/log/event_log_model.h"

#include <QDateTime>
#include <QGuiApplication>
#include <QPalette>

#include "ui/bridge/engine_types.h"
#include "ui/theme/theme.h"

namespace rookery::ui {

EventLogModel::EventLogModel(int capacity, QObject *parent)
    : QAbstractTableModel(parent)
    , m_capacity(std::max(1, capacity))
{ }

void EventLogModel::append(const QList<host::EngineEvent> &events)
{
    if (events.isEmpty())
        return;
    // Only the newest `capacity` of a large batch can survive anyway.
    const qsizetype skip = std::max<qsizetype>(0, events.size() - m_capacity);
    const int incoming = int(events.size() - skip);
    const int overflow = int(m_rows.size()) + incoming - m_capacity;
    if (overflow > 0) {
        beginRemoveRows({}, 0, overflow - 1);
        m_rows.erase(m_rows.begin(), m_rows.begin() + overflow);
        endRemoveRows();
    }
    const int first = int(m_rows.size());
    beginInsertRows({}, first, first + incoming - 1);
    m_rows.insert(m_rows.end(), events.begin() + skip, events.end());
    endInsertRows();
}

void EventLogModel::appendApp(host::EngineEvent::Level level, const QString &message)
{
    host::EngineEvent e;
    e.timeMs = QDateTime::currentMSecsSinceEpoch();
    e.level = level;
    e.area = "app";
    e.message = message.toStdString();
    append({e});
}

int EventLogModel::rowCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }

int EventLogModel::columnCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString EventLogModel::levelName(host::EngineEvent::Level level)
{
    switch (level) {
    case host::EngineEvent::Level::Debug:
        return tr("debug");
    case host::EngineEvent::Level::Info:
        return tr("info");
    case host::EngineEvent::Level::Warning:
        return tr("warning");
    case host::EngineEvent::Level::Error:
        return tr("error");
    }
    return {};
}

QVariant EventLogModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_rows.size()))
        return {};
    const auto &e = m_rows[size_t(index.row())];
    if (role == LevelRole)
        return int(e.level);
    if (role == Qt::ForegroundRole && index.column() == LevelColumn) {
        if (e.level == host::EngineEvent::Level::Error)
            return stateColor("error");
        if (e.level == host::EngineEvent::Level::Warning)
            return stateColor("paused");
        return {};
    }
    if (role == Qt::ToolTipRole && index.column() == MessageColumn)
        return toQString(e.message);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case TimeColumn:
        return QDateTime::fromMSecsSinceEpoch(e.timeMs).toString(QStringLiteral("HH:mm:ss"));
    case LevelColumn:
        return levelName(e.level);
    case AreaColumn:
        return toQString(e.area);
    case MessageColumn:
        return toQString(e.message);
    default:
        return {};
    }
}

QVariant EventLogModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case TimeColumn:
        return tr("Time");
    case LevelColumn:
        return tr("Level");
    case AreaColumn:
        return tr("Area");
    case MessageColumn:
        return tr("Message");
    default:
        return {};
    }
}

} // namespace rookery::ui
