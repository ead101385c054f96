// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/checkpoints/checkpoint_list.h"

#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "engine/common/format.h"
#include "ui/bridge/engine_types.h"
#include "ui/theme/icons.h"

namespace rookery::ui {
namespace {

constexpr int kIdRole = Qt::UserRole + 1;

bool sameList(const std::vector<host::CheckpointView> &a, const std::vector<host::CheckpointView> &b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].id != b[i].id || a[i].step != b[i].step || a[i].bytes != b[i].bytes)
            return false;
    return true;
}

} // namespace

CheckpointList::CheckpointList(QWidget *parent)
    : QWidget(parent)
    , m_tree(new QTreeWidget(this))
    , m_resume(new QPushButton(themedIcon(QStringLiteral("restore")), tr("&Resume from this"), this))
    , m_delete(new QPushButton(themedIcon(QStringLiteral("delete")), tr("&Delete…"), this))
{
    m_tree->setHeaderLabels({tr("Saved"), tr("Run"), tr("Step"), tr("Model"), tr("Size")});
    m_tree->setRootIsDecorated(false);
    m_tree->setAlternatingRowColors(true);
    m_tree->setUniformRowHeights(true);
    m_tree->setAccessibleName(tr("Checkpoints"));
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(QHeaderView::Stretch);
    m_resume->setAccessibleName(tr("Resume from the selected checkpoint"));
    m_delete->setAccessibleName(tr("Delete the selected checkpoint"));
    auto *note = new QLabel(tr("Rookery saves a checkpoint every few hundred steps and whenever it stops."), this);
    note->setObjectName(QStringLiteral("cardKey"));
    note->setWordWrap(true);

    auto *buttons = new QHBoxLayout;
    buttons->addWidget(note, 1);
    buttons->addWidget(m_resume);
    buttons->addWidget(m_delete);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_tree, 1);
    layout->addLayout(buttons);

    connect(m_tree, &QTreeWidget::itemSelectionChanged, this, &CheckpointList::updateButtons);
    connect(m_resume, &QPushButton::clicked, this, [this] {
        const int64_t id = selectedId();
        if (id < 0)
            return;
        const QString question = m_training ? tr("Stop the current training (after saving a checkpoint) and resume "
                                                 "from the selected checkpoint?")
                                            : tr("Resume training from the selected checkpoint?");
        confirm(question, tr("Resume"), [this, id] { Q_EMIT resumeRequested(id); });
    });
    connect(m_delete, &QPushButton::clicked, this, [this] {
        const int64_t id = selectedId();
        if (id < 0)
            return;
        confirm(tr("Delete the selected checkpoint? This cannot be undone."), tr("Delete"),
                [this, id] { Q_EMIT deleteRequested(id); });
    });
    updateButtons();
}

void CheckpointList::showCheckpoints(const std::vector<host::CheckpointView> &list, bool training)
{
    m_training = training;
    if (sameList(list, m_shown) && m_tree->topLevelItemCount() == int(list.size()))
        return;
    const int64_t keep = selectedId();
    m_shown = list;
    m_tree->clear();
    QLocale locale;
    for (const auto &c : list) {
        auto *item = new QTreeWidgetItem(m_tree);
        item->setText(0, locale.toString(QDateTime::fromMSecsSinceEpoch(c.createdAtMs), QLocale::ShortFormat));
        item->setText(1, toQString(c.run));
        item->setText(2, toQString(format::count(c.step)));
        item->setText(3, toQString(c.model));
        item->setText(4, toQString(format::bytes(double(c.bytes))));
        item->setTextAlignment(2, Qt::AlignRight | Qt::AlignVCenter);
        item->setTextAlignment(4, Qt::AlignRight | Qt::AlignVCenter);
        item->setData(0, kIdRole, qlonglong(c.id));
    }
    if (keep >= 0)
        select(keep);
    updateButtons();
}

QMessageBox *CheckpointList::confirmation() const { return m_confirm; }

bool CheckpointList::select(int64_t id)
{
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        QTreeWidgetItem *item = m_tree->topLevelItem(i);
        if (item->data(0, kIdRole).toLongLong() == id) {
            m_tree->setCurrentItem(item);
            return true;
        }
    }
    return false;
}

int64_t CheckpointList::selectedId() const
{
    const auto items = m_tree->selectedItems();
    return items.isEmpty() ? -1 : items.front()->data(0, kIdRole).toLongLong();
}

void CheckpointList::updateButtons()
{
    const bool any = selectedId() >= 0;
    m_resume->setEnabled(any);
    m_delete->setEnabled(any);
}

void CheckpointList::confirm(const QString &question, const QString &action, const std::function<void()> &onYes)
{
    if (m_confirm)
        m_confirm->close();
    auto *box = new QMessageBox(QMessageBox::Question, tr("Rookery"), question, QMessageBox::Cancel, this);
    QPushButton *yes = box->addButton(action, QMessageBox::AcceptRole);
    box->setDefaultButton(QMessageBox::Cancel);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setWindowModality(Qt::WindowModal);
    connect(box, &QMessageBox::finished, this, [box, yes, onYes] {
        if (box->clickedButton() == yes)
            onYes();
    });
    m_confirm = box;
    box->open(); // never exec(): the event loop keeps running, the engine keeps being polled
}

} // namespace rookery::ui
