// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/log/event_log_filter.h"

#include "ui/log/event_log_model.h"

namespace rookery::ui {

EventLogFilter::EventLogFilter(QObject *parent)
    : QSortFilterProxyModel(parent)
{ }

void EventLogFilter::setMinimumLevel(host::EngineEvent::Level level)
{
    if (level == m_minimum)
        return;
    m_minimum = level;
    invalidateRowsFilter();
}

void EventLogFilter::setText(const QString &text)
{
    if (text == m_text)
        return;
    m_text = text;
    invalidateRowsFilter();
}

bool EventLogFilter::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const
{
    const QAbstractItemModel *m = sourceModel();
    const QModelIndex level = m->index(sourceRow, EventLogModel::LevelColumn, sourceParent);
    if (m->data(level, EventLogModel::LevelRole).toInt() < int(m_minimum))
        return false;
    if (m_text.isEmpty())
        return true;
    for (int column : {EventLogModel::AreaColumn, EventLogModel::MessageColumn})
        if (m->data(m->index(sourceRow, column, sourceParent)).toString().contains(m_text, Qt::CaseInsensitive))
            return true;
    return false;
}

} // namespace rookery::ui
