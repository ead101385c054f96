// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main/main_actions.h"

#include <QAction>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QToolBar>
#include <QToolButton>

#include "ui/theme/icons.h"

namespace rookery::ui {
namespace {

QAction *make(QMainWindow *w, const QString &text, const char *icon, const QKeySequence &key = {})
{
    auto *a = new QAction(text, w);
    a->setObjectName(QString::fromLatin1(icon));
    if (!key.isEmpty()) {
        a->setShortcut(key);
        a->setShortcutContext(Qt::ApplicationShortcut);
    }
    return a;
}

} // namespace

void MainActions::create(QMainWindow *w)
{
    start = make(w, QMainWindow::tr("&Start or join…"), "join", QKeySequence(Qt::CTRL | Qt::Key_J));
    start->setToolTip(QMainWindow::tr("Join a swarm by address or start the local demo swarm (Ctrl+J)"));
    stop = make(w, QMainWindow::tr("S&top training"), "stop");
    stop->setToolTip(QMainWindow::tr("Save a checkpoint and stop training"));
    pauseResume = make(w, QMainWindow::tr("&Pause"), "pause", QKeySequence(Qt::CTRL | Qt::Key_P));
    snooze15 = make(w, QMainWindow::tr("For &15 minutes"), "snooze");
    snooze60 = make(w, QMainWindow::tr("For an &hour"), "snooze");
    snooze180 = make(w, QMainWindow::tr("For &3 hours"), "snooze");
    settings = make(w, QMainWindow::tr("S&ettings…"), "settings", QKeySequence(Qt::CTRL | Qt::Key_Comma));
    settings->setMenuRole(QAction::PreferencesRole);
    consent = make(w, QMainWindow::tr("&Withdraw consent…"), "consent");
    quit = make(w, QMainWindow::tr("&Quit"), "quit", QKeySequence(Qt::CTRL | Qt::Key_Q));
    quit->setToolTip(QMainWindow::tr("Save a checkpoint and quit (Ctrl+Q)"));
    quit->setMenuRole(QAction::QuitRole);
    darkTheme = make(w, QMainWindow::tr("&Dark theme"), "theme", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    darkTheme->setCheckable(true);
    about = make(w, QMainWindow::tr("&About Rookery"), "rookery");

    QMenuBar *bar = w->menuBar();
    QMenu *file = bar->addMenu(QMainWindow::tr("&Rookery"));
    file->addAction(start);
    file->addAction(stop);
    file->addSeparator();
    file->addAction(consent);
    file->addSeparator();
    file->addAction(quit);
    QMenu *control = bar->addMenu(QMainWindow::tr("&Control"));
    control->addAction(pauseResume);
    snoozeMenu = control->addMenu(QMainWindow::tr("S&nooze"));
    snoozeMenu->addAction(snooze15);
    snoozeMenu->addAction(snooze60);
    snoozeMenu->addAction(snooze180);
    control->addSeparator();
    control->addAction(settings);
    QMenu *view = bar->addMenu(QMainWindow::tr("&View"));
    view->addAction(darkTheme);
    QMenu *help = bar->addMenu(QMainWindow::tr("&Help"));
    help->addAction(about);

    auto *tools = w->addToolBar(QMainWindow::tr("Controls"));
    tools->setObjectName(QStringLiteral("controls"));
    tools->setMovable(false);
    tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tools->setIconSize(QSize(20, 20));
    tools->addAction(start);
    tools->addAction(pauseResume);
    snoozeMenu->menuAction()->setObjectName(QStringLiteral("snooze"));
    tools->addAction(snoozeMenu->menuAction());
    if (auto *button = qobject_cast<QToolButton *>(tools->widgetForAction(snoozeMenu->menuAction())))
        button->setPopupMode(QToolButton::InstantPopup);
    tools->addAction(stop);
    tools->addSeparator();
    tools->addAction(settings);
    refreshIcons();
}

void MainActions::refreshIcons()
{
    for (QAction *a : {start, stop, pauseResume, snooze15, snooze60, snooze180, settings, consent, quit, darkTheme})
        a->setIcon(themedIcon(a->objectName()));
    snoozeMenu->menuAction()->setIcon(themedIcon(QStringLiteral("snooze")));
    about->setIcon(appIcon());
}

} // namespace rookery::ui
