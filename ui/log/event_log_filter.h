// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QSortFilterProxyModel>

#include "engine/host/engine_snapshot.h"

namespace rookery::ui {

/// Shows the event log's rows at or above a level whose area or message contains a text
/// (case-insensitive).
///
/// Thread safety: UI thread.
class EventLogFilter : public QSortFilterProxyModel
{
    Q_OBJECT

public:
    explicit EventLogFilter(QObject *parent = nullptr);

    void setMinimumLevel(host::EngineEvent::Level level);
    void setText(const QString &text);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;

private:
    host::EngineEvent::Level m_minimum = host::EngineEvent::Level::Info;
    QString m_text;
};

} // namespace rookery::ui
