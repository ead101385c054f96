// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include <QPointer>
#include <QWidget>

#include "engine/host/engine_snapshot.h"

class QMessageBox;
class QPushButton;
class QTreeWidget;

namespace rookery::ui {

/// The checkpoints kept in SQLite, newest first, with Resume and Delete. Both ask first
/// (asynchronously, in a window-modal box); the answer leaves as a signal.
///
/// Thread safety: UI thread.
class CheckpointList : public QWidget
{
    Q_OBJECT

public:
    explicit CheckpointList(QWidget *parent = nullptr);

    /// `training`: whether a job runs now (resuming then replaces it, and says so).
    void showCheckpoints(const std::vector<host::CheckpointView> &checkpoints, bool training);
    /// Selects the row of checkpoint `id`; false if there is none.
    bool select(int64_t id);

    QTreeWidget *tree() const { return m_tree; }
    QPushButton *resumeButton() const { return m_resume; }
    QPushButton *deleteButton() const { return m_delete; }
    /// The confirmation box now open, if any.
    QMessageBox *confirmation() const;

Q_SIGNALS:
    void resumeRequested(int64_t id);
    void deleteRequested(int64_t id);

private:
    int64_t selectedId() const;
    void updateButtons();
    void confirm(const QString &question, const QString &action, const std::function<void()> &onYes);

    QTreeWidget *m_tree;
    QPushButton *m_resume;
    QPushButton *m_delete;
    QPointer<QMessageBox> m_confirm;
    std::vector<host::CheckpointView> m_shown;
    bool m_training = false;
};

} // namespace rookery::ui
