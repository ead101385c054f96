// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/log/event_log_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/log/event_log_filter.h"
#include "ui/log/event_log_model.h"

namespace rookery::ui {

using Level = host::EngineEvent::Level;

EventLogView::EventLogView(QWidget *parent)
    : QWidget(parent)
    , m_model(new EventLogModel(5000, this))
    , m_filter(new EventLogFilter(this))
    , m_level(new QComboBox(this))
    , m_text(new QLineEdit(this))
    , m_table(new QTableView(this))
{
    m_filter->setSourceModel(m_model);
    m_level->addItem(tr("All messages"), int(Level::Debug));
    m_level->addItem(tr("Information and above"), int(Level::Info));
    m_level->addItem(tr("Warnings and errors"), int(Level::Warning));
    m_level->addItem(tr("Errors only"), int(Level::Error));
    m_level->setCurrentIndex(1);
    m_level->setAccessibleName(tr("Log level filter"));
    m_text->setPlaceholderText(tr("Filter by text or area"));
    m_text->setClearButtonEnabled(true);
    m_text->setAccessibleName(tr("Log text filter"));
    auto *levelLabel = new QLabel(tr("&Show:"), this);
    levelLabel->setBuddy(m_level);

    m_table->setModel(m_filter);
    m_table->setAccessibleName(tr("Event log"));
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setAlternatingRowColors(true);
    m_table->setShowGrid(false);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    auto *header = m_table->horizontalHeader();
    // Fixed widths from the font: ResizeToContents would measure every row on each insert.
    const QFontMetrics fm = m_table->fontMetrics();
    header->setSectionResizeMode(QHeaderView::Interactive);
    header->resizeSection(EventLogModel::TimeColumn, fm.horizontalAdvance(QStringLiteral("00:00:00")) + 24);
    header->resizeSection(EventLogModel::LevelColumn, fm.horizontalAdvance(QStringLiteral("warning")) + 24);
    header->resizeSection(EventLogModel::AreaColumn, fm.horizontalAdvance(QStringLiteral("governor")) + 24);
    header->setSectionResizeMode(EventLogModel::MessageColumn, QHeaderView::Stretch);
    header->setHighlightSections(false);
    header->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);

    auto *bar = new QHBoxLayout;
    bar->addWidget(levelLabel);
    bar->addWidget(m_level);
    bar->addSpacing(8);
    bar->addWidget(m_text, 1);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addLayout(bar);
    layout->addWidget(m_table, 1);

    connect(m_level, &QComboBox::currentIndexChanged, this,
            [this] { m_filter->setMinimumLevel(Level(m_level->currentData().toInt())); });
    connect(m_text, &QLineEdit::textChanged, m_filter, &EventLogFilter::setText);
    m_filter->setMinimumLevel(Level::Info);
}

bool EventLogView::atBottom() const
{
    const QScrollBar *bar = m_table->verticalScrollBar();
    return bar->value() >= bar->maximum() - 2;
}

void EventLogView::append(const QList<host::EngineEvent> &events)
{
    const bool follow = atBottom();
    m_model->append(events);
    if (follow)
        m_table->scrollToBottom();
}

void EventLogView::appendApp(Level level, const QString &message)
{
    const bool follow = atBottom();
    m_model->appendApp(level, message);
    if (follow)
        m_table->scrollToBottom();
}

} // namespace rookery::ui
