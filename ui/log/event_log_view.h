// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QList>
#include <QWidget>

#include "engine/host/engine_snapshot.h"

class QComboBox;
class QLineEdit;
class QTableView;

namespace rookery::ui {

class EventLogFilter;
class EventLogModel;

/// The event log with its filter: a level box, a text field and the table. It keeps to
/// the newest row while the person is looking at the newest rows.
///
/// Thread safety: UI thread.
class EventLogView : public QWidget
{
    Q_OBJECT

public:
    explicit EventLogView(QWidget *parent = nullptr);

    void append(const QList<host::EngineEvent> &events);
    void appendApp(host::EngineEvent::Level level, const QString &message);

    EventLogModel *model() const { return m_model; }
    EventLogFilter *filter() const { return m_filter; }
    QComboBox *levelBox() const { return m_level; }
    QLineEdit *textBox() const { return m_text; }
    QTableView *table() const { return m_table; }

private:
    bool atBottom() const;
    EventLogModel *m_model;
    EventLogFilter *m_filter;
    QComboBox *m_level;
    QLineEdit *m_text;
    QTableView *m_table;
};

} // namespace rookery::ui
