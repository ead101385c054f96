// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFrame>

class QGridLayout;
class QLabel;

namespace rookery::ui {

/// A titled panel of "key: value" rows, the shape every card shares.
///
/// Thread safety: UI thread.
class Card : public QFrame
{
    Q_OBJECT

public:
    explicit Card(const QString &title, QWidget *parent = nullptr);

protected:
    /// Adds a row and returns its value label (word-wrapped, selectable).
    QLabel *addRow(const QString &key);
    /// A note under the rows ("Not measured yet"), hidden while empty.
    void setNote(const QString &text);
    QGridLayout *grid() const { return m_grid; }

private:
    QGridLayout *m_grid;
    QLabel *m_note;
};

} // namespace rookery::ui
