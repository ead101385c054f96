// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include <QColor>

class QSettings;

namespace rookery::ui {

enum class Theme { Light, Dark };

/// Applies `theme` to the whole application: the Fusion style, a palette, and the few
/// style-sheet rules our cards use. Widgets that paint with their own colours (charts,
/// the peer graph, icons) follow QEvent::PaletteChange.
///
/// Thread safety: UI thread.
void applyTheme(Theme theme);
Theme currentTheme();

Theme loadTheme(const QSettings &settings);
void saveTheme(QSettings &settings, Theme theme);

/// The colour for an engine state word ("running", "training", "paused", "lost", ...),
/// readable on the current palette's base colour.
QColor stateColor(const std::string &state);
/// Colour for chart series and highlights: 0 = throughput, 1 = loss.
QColor seriesColor(int index);

} // namespace rookery::ui
