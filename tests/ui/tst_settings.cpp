// SPDX-License-Identifier: GPL-3.0-or-later
// Settings round-trip through QSettings and reach the governor: on Save (only what the
// engine accepts is kept) and on every start, before consent is even asked.
#include <set>

#include <QCheckBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QtTest>

#include "engine/common/error.h"
#include "engine/device/governor_settings.h"
#include "tests/ui/ui_fixture.h"
#include "ui/settings/governor_settings_store.h"
#include "ui/settings/settings_dialog.h"
#include "ui/settings/settings_fields.h"

using namespace rookery;

namespace {

template <typename T> T *editor(ui::SettingsDialog *d, const char *key)
{
    auto *w = qobject_cast<T *>(d->editor(key));
    if (!w)
        qFatal("no editor of the expected kind for %s", key);
    return w;
}

QString stored(const QString &file, const char *key)
{
    QSettings s(file, QSettings::IniFormat);
    return s.value(QStringLiteral("governor/") + QLatin1String(key)).toString();
}

} // namespace

class TestSettings : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void defaultsGoToTheEngineBeforeConsent()
    {
        test::UiFixture f;
        f.start();
        const auto commands = f.engine->commands();
        QVERIFY(commands.size() >= 2);
        QCOMPARE(commands[0], std::string("settings"));
        QCOMPARE(commands[1], std::string("consent:false"));
        QCOMPARE(f.engine->appliedSettings().front(), ui::defaultGovernorSettings());
    }

    void saveRoundTripsAndReachesTheEngine()
    {
        test::UiFixture f;
        f.storeConsent();
        auto &c = f.start();
        c.openSettings();
        ui::SettingsDialog *d = c.settingsDialog();
        QVERIFY(d && d->isVisible());
        QCOMPARE(editor<QSpinBox>(d, "active.cpu-percent")->value(), 50);
        editor<QSpinBox>(d, "active.cpu-percent")->setValue(30);
        editor<QSpinBox>(d, "idle.upload-kibps")->setValue(2048);
        editor<QSpinBox>(d, "memory-cap-mib")->setValue(0);
        editor<QCheckBox>(d, "pause-on-battery")->setChecked(false);
        editor<QCheckBox>(d, "run-only-when-idle")->setChecked(true);
        editor<QLineEdit>(d, "schedule")->setText(QStringLiteral("  mon-fri 18:00-08:00 "));
        d->saveButton()->click();
        f.sync();

        const auto sent = f.engine->appliedSettings().back();
        QCOMPARE(sent.at("active.cpu-percent"), std::string("30"));
        QCOMPARE(sent.at("idle.upload-kibps"), std::string("2048"));
        QCOMPARE(sent.at("memory-cap-mib"), std::string("0"));
        QCOMPARE(sent.at("pause-on-battery"), std::string("false"));
        QCOMPARE(sent.at("run-only-when-idle"), std::string("true"));
        QCOMPARE(sent.at("schedule"), std::string("mon-fri 18:00-08:00"));
        QCOMPARE(sent.size(), ui::settingsFields().size()); // every setting, every time
        QVERIFY(!c.settingsDialog());                       // accepted and closed

        const QString file = f.settings->fileName();
        QCOMPARE(stored(file, "active.cpu-percent"), QStringLiteral("30"));
        QCOMPARE(stored(file, "schedule"), QStringLiteral("mon-fri 18:00-08:00"));

        // The next start sends them before anything else, and the dialog shows them.
        test::UiFixture next;
        next.settings = std::make_unique<QSettings>(file, QSettings::IniFormat);
        next.start();
        QCOMPARE(next.engine->commands().front(), std::string("settings"));
        QCOMPARE(next.engine->appliedSettings().front(), sent);
        next.controller->openSettings();
        QCOMPARE(editor<QSpinBox>(next.controller->settingsDialog(), "active.cpu-percent")->value(), 30);
        QVERIFY(!editor<QCheckBox>(next.controller->settingsDialog(), "pause-on-battery")->isChecked());
    }

    void aRefusalIsShownAndNothingIsKept()
    {
        test::UiFixture f;
        auto &c = f.start();
        f.engine->settingsError = "governor setting 'schedule' is malformed: unknown day 'caturday'";
        c.openSettings();
        ui::SettingsDialog *d = c.settingsDialog();
        editor<QLineEdit>(d, "schedule")->setText(QStringLiteral("caturday all day"));
        editor<QSpinBox>(d, "active.cpu-percent")->setValue(20);
        d->saveButton()->click();
        QVERIFY(!d->saveButton()->isEnabled()); // busy until the engine answers
        f.sync();
        QVERIFY(c.settingsDialog());
        QVERIFY(d->isVisible());
        QVERIFY(d->saveButton()->isEnabled());
        QVERIFY2(d->errorText().contains(QStringLiteral("unknown day 'caturday'")), qPrintable(d->errorText()));
        QVERIFY(stored(f.settings->fileName(), "active.cpu-percent").isEmpty());
        QCOMPARE(ui::GovernorSettingsStore(*f.settings).load().at("active.cpu-percent"), std::string("50"));

        // Corrected, it goes through and the error disappears with the dialog.
        f.engine->settingsError.clear();
        editor<QLineEdit>(d, "schedule")->clear();
        d->saveButton()->click();
        f.sync();
        QVERIFY(!c.settingsDialog());
        QCOMPARE(stored(f.settings->fileName(), "active.cpu-percent"), QStringLiteral("20"));
    }

    void restoreDefaults()
    {
        auto values = ui::defaultGovernorSettings();
        values["idle.cpu-percent"] = "10";
        values["pause-on-battery"] = "false";
        ui::SettingsDialog d(values);
        QCOMPARE(d.values(), values);
        for (QPushButton *b : d.findChildren<QPushButton *>())
            if (b->accessibleName() == QStringLiteral("Restore defaults"))
                b->click();
        QCOMPARE(d.values(), ui::defaultGovernorSettings());
    }

    void keysTheAppDoesNotKnowAreShownAndSent()
    {
        test::UiFixture f;
        auto &c = f.start();
        f.engine->applyGovernorSettings({{"gpu.max-percent", "80"}}, {});
        c.openSettings();
        ui::SettingsDialog *d = c.settingsDialog();
        auto *other = editor<QLineEdit>(d, "gpu.max-percent");
        QCOMPARE(other->text(), QStringLiteral("80"));
        QVERIFY(!other->accessibleName().isEmpty());
        other->setText(QStringLiteral("60"));
        d->saveButton()->click();
        f.sync();
        QCOMPARE(f.engine->appliedSettings().back().at("gpu.max-percent"), std::string("60"));
    }

    void storeOverlaysDefaults()
    {
        QTemporaryDir dir;
        QSettings s(dir.filePath(QStringLiteral("s.ini")), QSettings::IniFormat);
        ui::GovernorSettingsStore store(s);
        QCOMPARE(store.load(), ui::defaultGovernorSettings());
        store.save({{"idle-minutes", "12"}});
        auto expected = ui::defaultGovernorSettings();
        expected["idle-minutes"] = "12";
        QCOMPARE(ui::GovernorSettingsStore(s).load(), expected);
    }

    void tableIsWellFormed()
    {
        std::set<std::string> keys;
        for (const auto &f : ui::settingsFields()) {
            QVERIFY2(keys.insert(f.key).second, f.key.c_str());
            QVERIFY(!f.label.isEmpty());
            QVERIFY(!f.help.isEmpty());
            if (f.kind == ui::SettingsField::Kind::Integer) {
                const int v = std::atoi(f.defaultValue.c_str());
                QVERIFY2(f.min <= v && v <= f.max, f.key.c_str());
            }
        }
        QCOMPARE(keys.size(), size_t(14));
    }

    // The app's table holds presentation only: each row stands on one engine row, whose
    // key, kind and range it shows, and every engine setting has a row.
    void tableStandsOnTheEngines()
    {
        std::set<const device::GovernorSettingField *> rows;
        for (const auto &f : ui::settingsFields()) {
            QVERIFY(f.setting);
            QVERIFY2(rows.insert(f.setting).second, f.key.c_str());
            QCOMPARE(f.key, std::string(f.setting->key));
            QCOMPARE(int(f.kind), int(f.setting->kind()));
            if (f.kind == ui::SettingsField::Kind::Integer) {
                QCOMPARE(int64_t(f.min), f.setting->min);
                QVERIFY2(f.max > 0 && int64_t(f.max) <= f.setting->max, f.key.c_str());
            }
            QCOMPARE(ui::findSettingsField(f.key), &f);
        }
        QCOMPARE(rows.size(), device::governorSettingFields().size());
        QVERIFY(!ui::findSettingsField("turbo"));
    }

    void defaultsAreTheVolunteerSettings()
    {
        const auto defaults = ui::defaultGovernorSettings();
        QCOMPARE(defaults, device::toKeyValues(device::volunteerGovernorSettings()));
        QCOMPARE(defaults.at("active.cpu-percent"), std::string("50"));
        QCOMPARE(defaults.at("active.upload-kibps"), std::string("1024"));
        QCOMPARE(defaults.at("active.download-kibps"), std::string("4096"));
        QCOMPARE(defaults.at("memory-cap-mib"), std::string("2048"));
        QCOMPARE(defaults.at("idle.cpu-percent"), std::string("100"));
        QCOMPARE(defaults.at("pause-on-battery"), std::string("true"));
        for (const auto &f : ui::settingsFields())
            QCOMPARE(f.defaultValue, defaults.at(f.key));
    }

    void everyValueTheDialogCanProduceIsAccepted()
    {
        ui::SettingsDialog d(ui::defaultGovernorSettings());
        for (const auto &f : ui::settingsFields()) {
            QVERIFY2(d.editor(f.key), f.key.c_str()); // the dialog builds every editor
            auto *spin = qobject_cast<QSpinBox *>(d.editor(f.key));
            QCOMPARE(spin != nullptr, f.kind == ui::SettingsField::Kind::Integer);
            if (!spin)
                continue;
            QCOMPARE(spin->minimum(), f.min);
            QCOMPARE(spin->maximum(), f.max);
            for (int v : {spin->minimum(), spin->maximum()}) {
                spin->setValue(v);
                try {
                    device::fromKeyValues(d.values());
                } catch (const Error &e) {
                    QFAIL(e.what());
                }
            }
            spin->setValue(std::atoi(f.defaultValue.c_str()));
        }
        QCOMPARE(d.values(), ui::defaultGovernorSettings());
        editor<QLineEdit>(&d, "schedule")->setText(QStringLiteral("mon-fri 18:00-08:00, sat-sun all day"));
        try {
            device::fromKeyValues(d.values());
        } catch (const Error &e) {
            QFAIL(e.what());
        }
    }
};

QTEST_MAIN(TestSettings)
#include "tst_settings.moc"
