// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main/status_banner.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "engine/common/format.h"
#include "ui/bridge/engine_types.h"
#include "ui/main/status_text.h"
#include "ui/theme/icons.h"
#include "ui/theme/theme.h"

namespace rookery::ui {

StatusBanner::StatusBanner(QWidget *parent)
    : QFrame(parent)
    , m_dot(new QLabel(this))
    , m_headline(new QLabel(this))
    , m_detail(new QLabel(this))
    , m_progress(new QLabel(this))
    , m_error(new QLabel(this))
    , m_action(new QPushButton(this))
{
    setObjectName(QStringLiteral("banner"));
    setAccessibleName(tr("Status"));
    QFont big = m_headline->font();
    big.setPointSizeF(big.pointSizeF() * 1.4);
    big.setWeight(QFont::DemiBold);
    m_headline->setFont(big);
    m_headline->setAccessibleName(tr("Status"));
    m_dot->setFixedSize(14, 14);
    m_detail->setObjectName(QStringLiteral("cardKey"));
    m_detail->setWordWrap(true);
    m_progress->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    // Fixed: its text changes with every snapshot, and a changing width would lay the
    // whole window (charts included) out again each time.
    m_progress->setFixedWidth(
        m_progress->fontMetrics().horizontalAdvance(QStringLiteral("step 9,999,999 of 9,999,999")) + 8);
    m_progress->setAccessibleName(tr("Training progress"));
    m_error->setWordWrap(true);
    m_error->hide();
    m_action->setMinimumWidth(150);

    auto *text = new QVBoxLayout;
    text->setSpacing(2);
    text->addWidget(m_headline);
    text->addWidget(m_detail);
    text->addWidget(m_error);
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(16, 10, 16, 10);
    layout->setSpacing(12);
    layout->addWidget(m_dot, 0, Qt::AlignTop | Qt::AlignLeft);
    layout->addLayout(text, 1);
    layout->addWidget(m_progress);
    layout->addWidget(m_action);
    m_dot->setContentsMargins(0, 0, 0, 0);
    layout->setAlignment(m_dot, Qt::AlignVCenter);

    connect(m_action, &QPushButton::clicked, this, [this] {
        switch (m_current) {
        case Action::Consent:
            Q_EMIT consentRequested();
            break;
        case Action::Start:
            Q_EMIT startRequested();
            break;
        case Action::Pause:
            Q_EMIT pauseRequested();
            break;
        case Action::Resume:
            Q_EMIT resumeRequested();
            break;
        }
    });
    showSnapshot({});
}

void StatusBanner::setAction(Action action)
{
    // Icons are rendered from SVG: do it when the action changes, not on every snapshot.
    if (m_haveAction && action == m_current)
        return;
    m_haveAction = true;
    m_current = action;
    static const struct
    {
        const char *icon;
        const char *text;
        const char *name;
    } kActions[] = {
        {"consent", QT_TR_NOOP("Review and &consent…"), QT_TR_NOOP("Review and give consent")},
        {"join", QT_TR_NOOP("&Start…"), QT_TR_NOOP("Start or join a swarm")},
        {"pause", QT_TR_NOOP("&Pause"), QT_TR_NOOP("Pause training")},
        {"resume", QT_TR_NOOP("&Resume"), QT_TR_NOOP("Resume training")},
    };
    const auto &a = kActions[int(action)];
    m_action->setIcon(themedIcon(QString::fromLatin1(a.icon)));
    m_action->setText(tr(a.text));
    m_action->setAccessibleName(tr(a.name));
}

void StatusBanner::showSnapshot(const host::EngineSnapshot &s)
{
    const StatusText status = statusText(s);
    if (status.state != m_state) {
        m_state = status.state;
        paintDot();
    }
    m_headline->setText(status.headline);
    m_detail->setText(status.detail);
    m_detail->setVisible(!status.detail.isEmpty());
    m_error->setText(toQString(s.lastError));
    m_error->setVisible(!s.lastError.empty());

    const auto &t = s.training;
    QStringList parts;
    if (s.running && t.totalSteps > 0)
        parts << tr("step %1 of %2").arg(toQString(format::count(t.step)), toQString(format::count(t.totalSteps)));
    else if (s.running && t.step > 0)
        parts << tr("step %1").arg(toQString(format::count(t.step)));
    if (s.running && t.testAccuracy >= 0)
        parts << tr("test accuracy %1").arg(toQString(format::percent(t.testAccuracy)));
    if (s.running && t.etaSeconds >= 0)
        parts << tr("ETA %1").arg(toQString(format::duration(t.etaSeconds)));
    m_progress->setText(parts.join(QStringLiteral("\n")));

    if (!s.consentGiven)
        setAction(Action::Consent);
    else if (!s.running)
        setAction(Action::Start);
    else
        setAction(pausedByUser(s) ? Action::Resume : Action::Pause);
}

void StatusBanner::changeEvent(QEvent *event)
{
    QFrame::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        paintDot();
        m_haveAction = false;
        setAction(m_current);
    }
}

void StatusBanner::paintDot()
{
    // Style sheets are re-polished on every set: only when the colour changes.
    m_dot->setStyleSheet(QStringLiteral("background: %1; border-radius: 7px;").arg(stateColor(m_state).name()));
    m_error->setStyleSheet(QStringLiteral("color: %1;").arg(stateColor("error").name()));
}

} // namespace rookery::ui
