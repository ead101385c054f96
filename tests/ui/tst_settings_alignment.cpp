// SPDX-License-Identifier: GPL-3.0-or-later
// The app's settings table (ui/settings/settings_fields) against the governor's own
// (engine/device/governor_settings): the same keys, ranges inside the governor's, and
// volunteer defaults the governor accepts. Catches the two drifting apart.
#include <set>

#include <QtTest>

#include "engine/common/error.h"
#include "engine/device/governor_settings.h"
#include "ui/settings/settings_fields.h"

using namespace rookery;

class TestSettingsAlignment : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sameKeys()
    {
        std::set<std::string> app, engine;
        for (const auto &f : ui::settingsFields())
            app.insert(f.key);
        for (const auto &f : device::governorSettingFields())
            engine.insert(std::string(f.key));
        QCOMPARE(app, engine);
    }

    void sameKindsAndRangesWithinTheGovernors()
    {
        for (const auto &e : device::governorSettingFields()) {
            const ui::SettingsField *a = ui::findSettingsField(std::string(e.key));
            QVERIFY(a);
            using Int = int64_t &(*)(device::GovernorSettings &);
            using Bool = bool &(*)(device::GovernorSettings &);
            if (std::holds_alternative<Int>(e.field)) {
                QCOMPARE(int(a->kind), int(ui::SettingsField::Kind::Integer));
                QVERIFY2(a->min >= e.min && a->max <= e.max, a->key);
            } else if (std::holds_alternative<Bool>(e.field)) {
                QCOMPARE(int(a->kind), int(ui::SettingsField::Kind::Switch));
            } else {
                QCOMPARE(int(a->kind), int(ui::SettingsField::Kind::Text));
            }
        }
    }

    void theGovernorAcceptsTheVolunteerDefaults()
    {
        try {
            const auto s = device::fromKeyValues(ui::defaultGovernorSettings());
            QCOMPARE(s.whenActive.cpuPercent, int64_t(50));
            QVERIFY(s.pauseOnBattery);
        } catch (const Error &e) {
            QFAIL(e.what());
        }
    }

    void theGovernorAcceptsTheScheduleTheAppSuggests()
    {
        auto values = ui::defaultGovernorSettings();
        values["schedule"] = "mon-fri 18:00-08:00, sat-sun all day";
        try {
            device::fromKeyValues(values);
        } catch (const Error &e) {
            QFAIL(e.what());
        }
    }

    void everyValueTheDialogCanProduceIsAccepted()
    {
        // The spin boxes' extremes are the table's min and max.
        auto values = ui::defaultGovernorSettings();
        for (const auto &f : ui::settingsFields()) {
            if (f.kind != ui::SettingsField::Kind::Integer)
                continue;
            for (int v : {f.min, f.max}) {
                values[f.key] = std::to_string(v);
                try {
                    device::fromKeyValues(values);
                } catch (const Error &e) {
                    QFAIL(e.what());
                }
            }
            values[f.key] = f.defaultValue;
        }
    }
};

QTEST_MAIN(TestSettingsAlignment)
#include "tst_settings_alignment.moc"
