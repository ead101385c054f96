// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/theme/theme.h"

#include <QApplication>
#include <QPalette>
#include <QSettings>
#include <QStyleFactory>

namespace rookery::ui {
namespace {

Theme g_theme = Theme::Light;

struct Colors
{
    const char *window, *base, *alternate, *text, *button, *mid, *midlight, *dark, *highlight, *link, *disabled,
        *placeholder, *tooltip;
};

constexpr Colors kLight{"#f3f4f6", "#ffffff", "#f6f7f9", "#1f2933", "#e9ecef", "#c4cad2", "#dde1e6",
                        "#8a939e", "#2f6fde", "#2560c5", "#9aa3ad", "#7b8794", "#fffdf2"};
constexpr Colors kDark{"#1c2026", "#23282f", "#272d35", "#e3e7ec", "#2d333c", "#414955", "#353c46",
                       "#101317", "#4c8dff", "#7fb0ff", "#69737f", "#8a94a0", "#2d333c"};

QPalette makePalette(const Colors &c)
{
    QPalette p;
    const QColor text(c.text);
    p.setColor(QPalette::Window, QColor(c.window));
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, QColor(c.base));
    p.setColor(QPalette::AlternateBase, QColor(c.alternate));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(c.button));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::white);
    p.setColor(QPalette::Light, QColor(c.base).lighter(110));
    p.setColor(QPalette::Midlight, QColor(c.midlight));
    p.setColor(QPalette::Mid, QColor(c.mid));
    p.setColor(QPalette::Dark, QColor(c.dark));
    p.setColor(QPalette::Shadow, QColor(c.dark).darker(150));
    p.setColor(QPalette::Highlight, QColor(c.highlight));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(c.link));
    p.setColor(QPalette::LinkVisited, QColor(c.link));
    p.setColor(QPalette::ToolTipBase, QColor(c.tooltip));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(c.placeholder));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(c.disabled));
    return p;
}

QString styleSheetFor(const Colors &c)
{
    // Only our own named widgets: everything else keeps the Fusion look.
    return QStringLiteral("QFrame#card { background: %1; border: 1px solid %2; border-radius: 8px; }"
                          "QLabel#cardTitle { font-weight: 600; }"
                          "QLabel#cardKey { color: %3; }"
                          "QFrame#banner { background: %1; border: 1px solid %2; border-radius: 8px; }")
        .arg(QLatin1String(c.base), QLatin1String(c.midlight), QLatin1String(c.placeholder));
}

bool isDark() { return g_theme == Theme::Dark; }

} // namespace

void applyTheme(Theme theme)
{
    g_theme = theme;
    const Colors &c = theme == Theme::Dark ? kDark : kLight;
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(makePalette(c));
    if (auto *app = qobject_cast<QApplication *>(QCoreApplication::instance()))
        app->setStyleSheet(styleSheetFor(c));
}

Theme currentTheme() { return g_theme; }

Theme loadTheme(const QSettings &settings)
{
    return settings.value(QStringLiteral("view/theme")).toString() == QLatin1String("dark") ? Theme::Dark
                                                                                            : Theme::Light;
}

void saveTheme(QSettings &settings, Theme theme)
{
    settings.setValue(QStringLiteral("view/theme"),
                      theme == Theme::Dark ? QStringLiteral("dark") : QStringLiteral("light"));
}

QColor stateColor(const std::string &state)
{
    const bool dark = isDark();
    if (state == "running" || state == "training")
        return dark ? QColor("#4cc38a") : QColor("#1f9d55");
    if (state == "throttled")
        return dark ? QColor("#6ea8ff") : QColor("#2f6fde");
    if (state == "paused" || state == "waiting")
        return dark ? QColor("#f2b84b") : QColor("#c98a00");
    if (state == "lost" || state == "error")
        return dark ? QColor("#ff6b6b") : QColor("#d64545");
    return dark ? QColor("#8a94a0") : QColor("#8a939e"); // idle, stopped, unknown
}

QColor seriesColor(int index)
{
    const bool dark = isDark();
    if (index == 0)
        return dark ? QColor("#6ea8ff") : QColor("#2f6fde");
    return dark ? QColor("#f29e4c") : QColor("#d9731a");
}

} // namespace rookery::ui
