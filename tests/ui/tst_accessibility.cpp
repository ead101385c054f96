// SPDX-License-Identifier: GPL-3.0-or-later
// Keyboard and assistive use: every widget that takes focus has an accessible name, the
// main commands have shortcuts, Tab reaches the detail pages; the theme switch works and
// is remembered.
#include <QAbstractSpinBox>
#include <QAccessible>
#include <QApplication>
#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QTabBar>
#include <QTabWidget>
#include <QtTest>

#include "tests/ui/ui_fixture.h"
#include "ui/consent/consent_dialog.h"
#include "ui/join/join_dialog.h"
#include "ui/main/status_banner.h"
#include "ui/settings/settings_dialog.h"
#include "ui/settings/settings_fields.h"
#include "ui/theme/theme.h"

using namespace rookery;

namespace {

/// Focusable widgets under `root` that assistive technology would announce without a
/// name. Parts of compound widgets (a spin box's line edit) speak for their owner.
QStringList unnamed(QWidget *root, int *examined = nullptr)
{
    QStringList out;
    int count = 0;
    QList<QWidget *> all = root->findChildren<QWidget *>();
    all.prepend(root);
    for (QWidget *w : all) {
        if (!(w->focusPolicy() & Qt::TabFocus) || w->focusProxy())
            continue;
        if (qobject_cast<QAbstractSpinBox *>(w->parentWidget()) || qobject_cast<QComboBox *>(w->parentWidget()))
            continue;
        ++count;
        QAccessibleInterface *a = QAccessible::queryAccessibleInterface(w);
        const QString name = a ? a->text(QAccessible::Name) : QString();
        if (name.trimmed().isEmpty())
            out << QStringLiteral("%1 '%2' in %3")
                       .arg(QLatin1String(w->metaObject()->className()), w->objectName(),
                            QLatin1String(w->parentWidget() ? w->parentWidget()->metaObject()->className() : "-"));
    }
    if (examined)
        *examined += count;
    return out;
}

} // namespace

class TestAccessibility : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void everyFocusableWidgetHasAName()
    {
        test::UiFixture f;
        f.storeConsent();
        auto &c = f.start(); // no work remembered: the join dialog opens
        QVERIFY(c.joinDialog());
        int examined = 0;
        QStringList missing = unnamed(f.window(), &examined);
        missing << unnamed(c.joinDialog(), &examined);
        c.openSettings();
        missing << unnamed(c.settingsDialog(), &examined);
        ui::ConsentDialog consent(ui::defaultGovernorSettings());
        missing << unnamed(&consent, &examined);
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QStringLiteral("\n"))));
        QVERIFY2(examined > 40, qPrintable(QString::number(examined)));

        // The check itself notices a nameless field.
        QWidget bare;
        new QLineEdit(&bare);
        QCOMPARE(unnamed(&bare).size(), 1);
    }

    void shortcuts()
    {
        test::UiFixture f;
        f.start();
        auto &a = f.window()->actions();
        QCOMPARE(a.pauseResume->shortcut(), QKeySequence(QStringLiteral("Ctrl+P")));
        QCOMPARE(a.settings->shortcut(), QKeySequence(QStringLiteral("Ctrl+,")));
        QCOMPARE(a.quit->shortcut(), QKeySequence(QStringLiteral("Ctrl+Q")));
        QCOMPARE(a.start->shortcut(), QKeySequence(QStringLiteral("Ctrl+J")));
        // No two actions share a shortcut.
        QSet<QString> keys;
        for (QAction *action : f.window()->findChildren<QAction *>()) {
            const QString key = action->shortcut().toString();
            if (key.isEmpty())
                continue;
            QVERIFY2(!keys.contains(key), qPrintable(key));
            keys.insert(key);
        }
    }

    void ctrlPPausesFromTheKeyboard()
    {
        test::UiFixture f;
        f.storeConsent();
        f.storeDemoChoice();
        f.start();
        f.window()->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(f.window()));
        QTest::keyClick(f.window(), Qt::Key_P, Qt::ControlModifier);
        QCOMPARE(f.engine->commands().back(), std::string("pause"));
        f.sync();
        QTest::keyClick(f.window(), Qt::Key_P, Qt::ControlModifier);
        QCOMPARE(f.engine->commands().back(), std::string("resume"));
    }

    void tabReachesTheDetailPages()
    {
        test::UiFixture f;
        f.start();
        QWidget *w = f.window()->banner()->actionButton();
        QSet<QWidget *> seen;
        for (int i = 0; i < 30 && w && !seen.contains(w); ++i) {
            seen.insert(w);
            w = w->nextInFocusChain();
        }
        QVERIFY(seen.contains(f.window()->tabs()->tabBar()));
    }

    void themeSwitchesAndIsRemembered()
    {
        test::UiFixture f;
        f.start();
        QAction *dark = f.window()->actions().darkTheme;
        QVERIFY(!dark->isChecked());
        dark->trigger();
        QCOMPARE(ui::currentTheme(), ui::Theme::Dark);
        QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 80);
        QVERIFY(QApplication::palette().color(QPalette::WindowText).lightness() > 180);
        QCOMPARE(ui::loadTheme(*f.settings), ui::Theme::Dark);
        QVERIFY(ui::stateColor("training") != QColor());
        dark->trigger();
        QCOMPARE(ui::currentTheme(), ui::Theme::Light);
        QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 200);
        QCOMPARE(ui::loadTheme(*f.settings), ui::Theme::Light);
    }
};

QTEST_MAIN(TestAccessibility)
#include "tst_accessibility.moc"
