// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/tray/tray_icon.h"

#include <QAction>
#include <QMenu>
#include <QPainter>
#include <QSystemTrayIcon>

#include "ui/bridge/engine_types.h"
#include "ui/main/status_text.h"
#include "ui/theme/icons.h"
#include "ui/theme/theme.h"

namespace rookery::ui {
namespace {

/// The app icon with a dot in the state's colour in its corner.
QIcon badgedIcon(const std::string &state)
{
    QPixmap pixmap = appIcon().pixmap(64, 64);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(QPen(Qt::white, 4));
    painter.setBrush(stateColor(state));
    painter.drawEllipse(QRectF(36, 36, 26, 26));
    return QIcon(pixmap);
}

} // namespace

TrayIcon::TrayIcon(QObject *parent)
    : QObject(parent)
    , m_icon(new QSystemTrayIcon(this))
    , m_menu(new QMenu)
    , m_status(m_menu->addAction(tr("Starting…")))
    , m_show(m_menu->addAction(themedIcon(QStringLiteral("show")), tr("&Show Rookery")))
    , m_pause(m_menu->addAction(themedIcon(QStringLiteral("pause")), tr("&Pause")))
    , m_snooze(m_menu->addAction(themedIcon(QStringLiteral("snooze")), tr("S&nooze for an hour")))
    , m_quit(new QAction(themedIcon(QStringLiteral("quit")), tr("&Quit"), this))
{
    m_status->setEnabled(false);
    m_menu->insertSeparator(m_show);
    m_menu->addSeparator();
    m_menu->addAction(m_quit);
    m_menu->setAccessibleName(tr("Rookery tray menu"));
    m_icon->setContextMenu(m_menu);
    m_icon->setIcon(badgedIcon("stopped"));
    m_icon->setToolTip(tr("Rookery"));
    connect(m_show, &QAction::triggered, this, &TrayIcon::showRequested);
    connect(m_pause, &QAction::triggered, this, [this] {
        if (m_paused)
            Q_EMIT resumeRequested();
        else
            Q_EMIT pauseRequested();
    });
    connect(m_snooze, &QAction::triggered, this, [this] { Q_EMIT snoozeRequested(60); });
    connect(m_quit, &QAction::triggered, this, &TrayIcon::quitRequested);
    connect(m_icon, &QSystemTrayIcon::activated, this, [this](QSystemTrayIcon::ActivationReason reason) {
        if (reason == QSystemTrayIcon::Trigger || reason == QSystemTrayIcon::DoubleClick)
            Q_EMIT showRequested();
    });
}

TrayIcon::~TrayIcon() { delete m_menu; }

bool TrayIcon::available() { return QSystemTrayIcon::isSystemTrayAvailable(); }

void TrayIcon::show() { m_icon->show(); }

void TrayIcon::showSnapshot(const host::EngineSnapshot &s)
{
    const StatusText status = statusText(s);
    const bool paused = pausedByUser(s);
    if (paused != m_paused) { // icons are rendered from SVG: only on a change
        m_paused = paused;
        m_pause->setText(m_paused ? tr("&Resume") : tr("&Pause"));
        m_pause->setIcon(themedIcon(m_paused ? QStringLiteral("resume") : QStringLiteral("pause")));
    }
    m_pause->setEnabled(s.consentGiven && s.running);
    m_snooze->setEnabled(s.consentGiven && s.running && !m_paused);
    m_status->setText(status.headline);
    const QString tip = status.detail.isEmpty() ? QStringLiteral("Rookery: %1").arg(status.headline)
                                                : QStringLiteral("Rookery: %1\n%2").arg(status.headline, status.detail);
    m_icon->setToolTip(tip);
    if (status.state != m_state) {
        m_state = status.state;
        m_icon->setIcon(badgedIcon(m_state));
    }
}

QString TrayIcon::toolTip() const { return m_icon->toolTip(); }

void TrayIcon::notify(const QString &title, const QString &text)
{
    if (m_icon->isVisible())
        m_icon->showMessage(title, text, appIcon(), 5000);
}

} // namespace rookery::ui
