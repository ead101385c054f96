// SPDX-License-Identifier: GPL-3.0-or-later
// Start at login: a desktop entry in $XDG_CONFIG_HOME/autostart, written and removed, by
// hand and from the settings dialog.
#include <QCheckBox>
#include <QFile>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/ui/ui_fixture.h"
#include "ui/autostart/autostart.h"
#include "ui/settings/settings_dialog.h"

using namespace rookery;

namespace {

QString readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

} // namespace

class TestAutostart : public QObject
{
    Q_OBJECT

    QTemporaryDir m_home;
    QString m_config;

private Q_SLOTS:
    void init()
    {
        m_config = m_home.filePath(QStringLiteral("config-%1").arg(QTest::currentTestFunction()));
        qputenv("XDG_CONFIG_HOME", m_config.toLocal8Bit());
        qputenv("HOME", m_home.path().toLocal8Bit());
    }

    void honoursXdgConfigHome()
    {
        QCOMPARE(ui::Autostart::entryPath(), m_config + QStringLiteral("/autostart/rookery.desktop"));
        qputenv("XDG_CONFIG_HOME", "relative/ignored"); // the spec: absolute paths only
        QCOMPARE(ui::Autostart::entryPath(), m_home.path() + QStringLiteral("/.config/autostart/rookery.desktop"));
        qunsetenv("XDG_CONFIG_HOME");
        QCOMPARE(ui::Autostart::entryPath(), m_home.path() + QStringLiteral("/.config/autostart/rookery.desktop"));
    }

    void writesAndRemovesTheEntry()
    {
        QVERIFY(!ui::Autostart::isEnabled());
        QString error;
        QVERIFY2(ui::Autostart::setEnabled(true, QStringLiteral("/usr/bin/rookery"), &error), qPrintable(error));
        QVERIFY(ui::Autostart::isEnabled());
        const QString text = readAll(ui::Autostart::entryPath());
        QVERIFY(text.startsWith(QStringLiteral("[Desktop Entry]\n")));
        QVERIFY(text.contains(QStringLiteral("\nType=Application\n")));
        QVERIFY(text.contains(QStringLiteral("\nExec=/usr/bin/rookery --minimized\n")));
        QVERIFY(ui::Autostart::setEnabled(true, QStringLiteral("/usr/bin/rookery"))); // idempotent
        QVERIFY(ui::Autostart::setEnabled(false, {}));
        QVERIFY(!ui::Autostart::isEnabled());
        QVERIFY(ui::Autostart::setEnabled(false, {})); // removing nothing is fine
    }

    void quotesAwkwardPaths_data()
    {
        QTest::addColumn<QString>("program");
        QTest::addColumn<QString>("exec");
        QTest::newRow("plain") << QStringLiteral("/opt/rookery/bin/rookery")
                               << QStringLiteral("Exec=/opt/rookery/bin/rookery --minimized");
        QTest::newRow("space") << QStringLiteral("/opt/Rookery Beta/rookery")
                               << QStringLiteral("Exec=\"/opt/Rookery Beta/rookery\" --minimized");
        QTest::newRow("dollar") << QStringLiteral("/home/a$b/rookery")
                                << QStringLiteral("Exec=\"/home/a\\\\$b/rookery\" --minimized");
        QTest::newRow("quote") << QStringLiteral("/x/\"q\"/rookery")
                               << QStringLiteral("Exec=\"/x/\\\\\"q\\\\\"/rookery\" --minimized");
    }

    void quotesAwkwardPaths()
    {
        QFETCH(QString, program);
        QFETCH(QString, exec);
        const QString text = QString::fromUtf8(ui::Autostart::entryText(program));
        QVERIFY2(text.contains(QLatin1Char('\n') + exec + QLatin1Char('\n')), qPrintable(text));
    }

    void theSettingsDialogSwitchesIt()
    {
        test::UiFixture f;
        auto &c = f.start();
        c.openSettings();
        auto *box = c.settingsDialog()->findChild<QCheckBox *>();
        QVERIFY(box);
        QCOMPARE(box->accessibleName(), QStringLiteral("Start Rookery when I log in"));
        QVERIFY(!box->isChecked());
        box->setChecked(true);
        c.settingsDialog()->saveButton()->click();
        f.sync();
        QVERIFY(ui::Autostart::isEnabled());
        QVERIFY(readAll(ui::Autostart::entryPath()).contains(QStringLiteral("--minimized")));

        c.openSettings();
        box = c.settingsDialog()->findChild<QCheckBox *>();
        QVERIFY(box->isChecked());
        box->setChecked(false);
        c.settingsDialog()->saveButton()->click();
        f.sync();
        QVERIFY(!ui::Autostart::isEnabled());
    }
};

QTEST_MAIN(TestAutostart)
#include "tst_autostart.moc"
