// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace rookery::log {

enum class Level { Debug, Info, Warning, Error };

/// Where log lines go. The default sink writes "LEVEL area: message" to stderr.
/// A sink is called on whichever thread logged, under the logger's mutex; it must be
/// quick and must not log itself.
using Sink = std::function<void(Level, std::string_view area, std::string_view message)>;

/// Thread safety: all functions here may be called from any thread.
void setSink(Sink sink);
void setMinimumLevel(Level level);
Level minimumLevel();
void write(Level level, std::string_view area, std::string_view message);

inline void debug(std::string_view area, std::string_view message) { write(Level::Debug, area, message); }
inline void info(std::string_view area, std::string_view message) { write(Level::Info, area, message); }
inline void warning(std::string_view area, std::string_view message) { write(Level::Warning, area, message); }
inline void error(std::string_view area, std::string_view message) { write(Level::Error, area, message); }

std::string_view levelName(Level level);

} // namespace rookery::log
