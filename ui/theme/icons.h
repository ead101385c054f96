// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QColor>
#include <QIcon>
#include <QString>

namespace rookery::ui {

/// One of our SVG icons (resources/icons/<name>.svg), drawn in the current palette's
/// text colour, with a greyed variant for disabled actions. Call again after a theme
/// change. An unknown name gives a null icon.
///
/// Thread safety: UI thread.
QIcon themedIcon(const QString &name);

/// The same icon drawn in `color` (the tray's state badge, the peer legend).
QIcon coloredIcon(const QString &name, const QColor &color);

/// The application icon (full colour).
QIcon appIcon();

} // namespace rookery::ui
