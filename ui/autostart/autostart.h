// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

namespace rookery::ui {

/// Start at login, the freedesktop way: a desktop entry in $XDG_CONFIG_HOME/autostart
/// (~/.config/autostart when unset) that starts Rookery in the tray.
///
/// Thread safety: UI thread (reads the environment and the file system).
class Autostart
{
public:
    /// $XDG_CONFIG_HOME/autostart/rookery.desktop (an absolute XDG_CONFIG_HOME only, as
    /// the specification says), else $HOME/.config/autostart/rookery.desktop.
    static QString entryPath();
    static bool isEnabled();
    /// Writes or removes the entry; `program` is the executable to start. Returns false
    /// and fills `error` when the file cannot be written or removed.
    static bool setEnabled(bool on, const QString &program, QString *error = nullptr);
    /// The entry's text for `program` (quoted as the Desktop Entry spec requires).
    static QByteArray entryText(const QString &program);
};

} // namespace rookery::ui
