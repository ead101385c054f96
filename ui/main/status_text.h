// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include <QString>

#include "engine/host/engine_snapshot.h"

namespace rookery::ui {

/// What Rookery is doing, in words, for the banner, the tray and the window title.
struct StatusText
{
    std::string state; ///< a stateColor() word: "running", "throttled", "paused", "waiting", "stopped"
    QString headline;  ///< "Training", "Paused", "Snoozed until 14:30", ...
    QString detail;    ///< the governor's reason or what to do next
};

StatusText statusText(const host::EngineSnapshot &snapshot, qint64 nowMs);
StatusText statusText(const host::EngineSnapshot &snapshot);

/// Paused by the person: paused outright or snoozed until later than `nowMs`.
bool pausedByUser(const host::EngineSnapshot &snapshot, qint64 nowMs);
bool pausedByUser(const host::EngineSnapshot &snapshot);

} // namespace rookery::ui
