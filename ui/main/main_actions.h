// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

class QAction;
class QMainWindow;
class QMenu;

namespace rookery::ui {

/// The window's commands with their shortcuts, in menus and on the toolbar. The window
/// keeps their texts and enabled states in step with the engine; the controller
/// connects their triggered() signals.
struct MainActions
{
    QAction *start = nullptr;       ///< Start or join… (Ctrl+J)
    QAction *stop = nullptr;        ///< Stop training (checkpoints first)
    QAction *pauseResume = nullptr; ///< Pause / Resume (Ctrl+P)
    QAction *snooze15 = nullptr;
    QAction *snooze60 = nullptr;
    QAction *snooze180 = nullptr;
    QMenu *snoozeMenu = nullptr;
    QAction *settings = nullptr; ///< Settings… (Ctrl+,)
    QAction *consent = nullptr;  ///< Give consent… / Withdraw consent…
    QAction *quit = nullptr;     ///< Quit (Ctrl+Q), checkpoints first
    QAction *darkTheme = nullptr;
    QAction *about = nullptr;

    /// Creates the actions, the menu bar and the toolbar of `window`.
    void create(QMainWindow *window);
    /// Sets every icon again (after a theme change).
    void refreshIcons();
};

} // namespace rookery::ui
