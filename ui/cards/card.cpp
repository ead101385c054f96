// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/cards/card.h"

#include <QGridLayout>
#include <QLabel>
#include <QVBoxLayout>

namespace rookery::ui {

Card::Card(const QString &title, QWidget *parent)
    : QFrame(parent)
    , m_grid(new QGridLayout)
    , m_note(new QLabel(this))
{
    setObjectName(QStringLiteral("card"));
    setAccessibleName(title);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(14, 10, 14, 12);
    layout->setSpacing(8);
    auto *heading = new QLabel(title, this);
    heading->setObjectName(QStringLiteral("cardTitle"));
    QFont font = heading->font();
    font.setPointSizeF(font.pointSizeF() * 1.1);
    heading->setFont(font);
    layout->addWidget(heading);
    m_grid->setHorizontalSpacing(12);
    m_grid->setVerticalSpacing(4);
    m_grid->setColumnStretch(1, 1);
    layout->addLayout(m_grid);
    m_note->setObjectName(QStringLiteral("cardKey"));
    m_note->setWordWrap(true);
    m_note->hide();
    layout->addWidget(m_note);
}

QLabel *Card::addRow(const QString &key)
{
    const int row = m_grid->rowCount();
    auto *keyLabel = new QLabel(key, this);
    keyLabel->setObjectName(QStringLiteral("cardKey"));
    keyLabel->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    auto *value = new QLabel(QStringLiteral("–"), this);
    value->setWordWrap(true);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setAccessibleName(key);
    keyLabel->setBuddy(value);
    m_grid->addWidget(keyLabel, row, 0);
    m_grid->addWidget(value, row, 1);
    return value;
}

void Card::setNote(const QString &text)
{
    m_note->setText(text);
    m_note->setVisible(!text.isEmpty());
}

} // namespace rookery::ui
