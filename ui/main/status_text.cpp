// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main/status_text.h"

#include <QCoreApplication>
#include <QDateTime>

#include "ui/bridge/engine_types.h"

namespace rookery::ui {
namespace {

QString tr(const char *text) { return QCoreApplication::translate("rookery::ui::StatusText", text); }

qint64 now() { return QDateTime::currentMSecsSinceEpoch(); }

} // namespace

bool pausedByUser(const host::EngineSnapshot &s, qint64 nowMs)
{
    return s.governor.pausedByUser || s.governor.snoozedUntilMs > nowMs;
}

bool pausedByUser(const host::EngineSnapshot &s) { return pausedByUser(s, now()); }

StatusText statusText(const host::EngineSnapshot &s, qint64 nowMs)
{
    const auto &g = s.governor;
    if (!s.consentGiven)
        return {"stopped", tr("Waiting for your consent"), tr("Nothing computes until you agree.")};
    if (!s.running)
        return {"stopped", tr("Not training"), tr("Choose Start to join a swarm or start the local demo swarm.")};
    if (g.snoozedUntilMs > nowMs) {
        const QString until = QDateTime::fromMSecsSinceEpoch(g.snoozedUntilMs).toString(QStringLiteral("HH:mm"));
        return {"paused", tr("Snoozed until %1").arg(until), tr("Training resumes by itself; Resume ends the snooze.")};
    }
    if (g.pausedByUser)
        return {"paused", tr("Paused"), tr("Training is held; Resume (Ctrl+P) carries on where it stopped.")};
    const QString reason = toQString(g.reason);
    if (g.state == "throttled")
        return {"throttled", tr("Training, throttled"), reason};
    if (g.state == "paused")
        return {"paused", tr("Paused by a rule"), reason};
    if (g.state == "waiting")
        return {"waiting", tr("Waiting"), reason};
    if (g.state == "stopped")
        return {"stopped", tr("Stopped"), reason};
    return {"running", tr("Training"), reason};
}

StatusText statusText(const host::EngineSnapshot &s) { return statusText(s, now()); }

} // namespace rookery::ui
