// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/theme/icons.h"

#include <QFile>
#include <QGuiApplication>
#include <QPainter>
#include <QPalette>
#include <QPixmap>
#include <QSvgRenderer>

// The resources live in the static library; they must be registered by name, outside
// any namespace, before the first use.
static void initRookeryResources() { Q_INIT_RESOURCE(rookery); }

namespace rookery::ui {
namespace {

QByteArray svgSource(const QString &name)
{
    static const bool initialised = (initRookeryResources(), true);
    Q_UNUSED(initialised);
    QFile file(QStringLiteral(":/icons/%1.svg").arg(name));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

QPixmap render(const QByteArray &svg, int size)
{
    QSvgRenderer renderer(svg);
    QPixmap pixmap(size, size);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    renderer.render(&painter);
    return pixmap;
}

void addSizes(QIcon &icon, const QByteArray &svg, QIcon::Mode mode)
{
    for (int size : {16, 20, 24, 32, 48, 64})
        icon.addPixmap(render(svg, size), mode);
}

QByteArray tinted(QByteArray svg, const QColor &color) { return svg.replace("currentColor", color.name().toLatin1()); }

} // namespace

QIcon themedIcon(const QString &name)
{
    const QByteArray svg = svgSource(name);
    if (svg.isEmpty())
        return {};
    const QPalette palette = QGuiApplication::palette();
    QIcon icon;
    addSizes(icon, tinted(svg, palette.color(QPalette::Active, QPalette::WindowText)), QIcon::Normal);
    addSizes(icon, tinted(svg, palette.color(QPalette::Disabled, QPalette::WindowText)), QIcon::Disabled);
    return icon;
}

QIcon coloredIcon(const QString &name, const QColor &color)
{
    const QByteArray svg = svgSource(name);
    if (svg.isEmpty())
        return {};
    QIcon icon;
    addSizes(icon, tinted(svg, color), QIcon::Normal);
    return icon;
}

QIcon appIcon()
{
    const QByteArray svg = svgSource(QStringLiteral("rookery"));
    QIcon icon;
    if (!svg.isEmpty())
        addSizes(icon, svg, QIcon::Normal);
    return icon;
}

} // namespace rookery::ui
