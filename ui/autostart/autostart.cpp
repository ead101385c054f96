// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/autostart/autostart.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

namespace rookery::ui {
namespace {

/// Quotes an Exec argument when it holds a reserved character (Desktop Entry spec,
/// "The Exec key").
QString quoteExecArgument(const QString &arg)
{
    static const QString reserved = QStringLiteral(" \t\n\"'\\><~|&;$*?#()`");
    bool needs = arg.isEmpty();
    for (QChar c : arg)
        needs = needs || reserved.contains(c);
    if (!needs)
        return arg;
    QString out = QStringLiteral("\"");
    for (QChar c : arg) {
        if (c == QLatin1Char('"') || c == QLatin1Char('`') || c == QLatin1Char('$') || c == QLatin1Char('\\'))
            out += QLatin1Char('\\');
        out += c;
    }
    out += QLatin1Char('"');
    // The whole value is also a string value, whose own escape for a backslash is "\\".
    return out.replace(QLatin1Char('\\'), QStringLiteral("\\\\"));
}

} // namespace

QString Autostart::entryPath()
{
    QString config = QString::fromLocal8Bit(qgetenv("XDG_CONFIG_HOME"));
    if (config.isEmpty() || !QDir::isAbsolutePath(config))
        config = QDir::homePath() + QStringLiteral("/.config");
    return config + QStringLiteral("/autostart/rookery.desktop");
}

bool Autostart::isEnabled() { return QFileInfo::exists(entryPath()); }

QByteArray Autostart::entryText(const QString &program)
{
    QString text = QStringLiteral("[Desktop Entry]\n"
                                  "Type=Application\n"
                                  "Name=Rookery\n"
                                  "Comment=Volunteer computing for training neural networks together\n"
                                  "Exec=%1 --minimized\n"
                                  "Icon=rookery\n"
                                  "Terminal=false\n"
                                  "X-GNOME-Autostart-enabled=true\n")
                       .arg(quoteExecArgument(program));
    return text.toUtf8();
}

bool Autostart::setEnabled(bool on, const QString &program, QString *error)
{
    const QString path = entryPath();
    if (!on) {
        if (!QFileInfo::exists(path) || QFile::remove(path))
            return true;
        if (error)
            *error = QObject::tr("Could not remove %1.").arg(path);
        return false;
    }
    if (!QDir().mkpath(QFileInfo(path).absolutePath())) {
        if (error)
            *error = QObject::tr("Could not create the folder of %1.").arg(path);
        return false;
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(entryText(program)) < 0 || !file.commit()) {
        if (error)
            *error = QObject::tr("Could not write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

} // namespace rookery::ui
