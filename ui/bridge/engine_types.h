// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's value types as Qt metatypes, and the string conversions every view needs.
#pragma once

#include <string>

#include <QList>
#include <QMetaType>
#include <QString>

#include "engine/host/engine_snapshot.h"

Q_DECLARE_METATYPE(rookery::host::EngineSnapshot)
Q_DECLARE_METATYPE(rookery::host::EngineEvent)

namespace rookery::ui {

inline QString toQString(const std::string &text) { return QString::fromStdString(text); }

/// Registers the engine's types for queued signals; idempotent.
void registerEngineMetaTypes();

} // namespace rookery::ui
