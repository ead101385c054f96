// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include <set>

#include "engine/common/error.h"
#include "engine/device/governor.h"
#include "tests/fakes/fake_clock.h"

using namespace rookery;
using device::GovernorSettings;

namespace {

device::GovernorEnvironment fakeEnvironment()
{
    device::GovernorEnvironment e;
    e.clock = std::make_shared<test::FakeClock>();
    e.cores = 4;
    return e;
}

} // namespace

class TestGovernorSettings : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void defaultsAreValid() { device::validate(GovernorSettings{}); }

    void badSettingsNameTheField_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("negative cores") << "active.max-cores"
                                        << "-1"
                                        << "must be between 0 and 4096, not -1";
        QTest::newRow("over 100%") << "idle.cpu-percent"
                                   << "150"
                                   << "must be between 1 and 100, not 150";
        QTest::newRow("zero percent") << "active.cpu-percent"
                                      << "0"
                                      << "must be between 1 and 100, not 0";
        QTest::newRow("negative upload") << "active.upload-kibps"
                                         << "-5"
                                         << "must be between 0 and 4294967296, not -5";
        QTest::newRow("negative memory cap") << "memory-cap-mib"
                                             << "-100"
                                             << "must be between 0 and 1073741824, not -100";
        QTest::newRow("zero idle minutes") << "idle-minutes"
                                           << "0"
                                           << "must be between 1 and 1440";
        QTest::newRow("negative resume delay") << "battery-resume-seconds"
                                               << "-1"
                                               << "must be between 0 and 86400, not -1";
        QTest::newRow("malformed schedule") << "schedule"
                                            << "mon-fri 18:00-25:00"
                                            << "is malformed: schedule: '25:00' is not a time";
    }

    // Acceptance: a bad setting gives a clear error and the previous settings stay.
    void badSettingsNameTheField()
    {
        QFETCH(QString, key);
        QFETCH(QString, value);
        QFETCH(QString, mentions);
        GovernorSettings good;
        good.whenActive.cpuPercent = 40;
        good.schedule = "daily 20:00-06:00";
        device::Governor g(good, fakeEnvironment());
        const auto before = g.status();
        GovernorSettings bad = good;
        try {
            bad = device::fromKeyValues({{key.toStdString(), value.toStdString()}}, good);
            QFAIL("fromKeyValues should refuse it");
        } catch (const Error &e) {
            QVERIFY2(QString(e.what()).contains("governor setting '" + key + "' " + mentions), e.what());
        }
        // The same value set directly in the struct, through setSettings().
        auto keyValues = device::toKeyValues(good);
        keyValues[key.toStdString()] = value.toStdString();
        const device::GovernorSettingField *f = device::findGovernorSettingField(key.toStdString());
        QVERIFY(f);
        if (const auto *integer = std::get_if<device::SettingMember<int64_t>>(&f->member))
            integer->in(bad) = value.toLongLong();
        else if (const auto *text = std::get_if<device::SettingMember<std::string>>(&f->member))
            text->in(bad) = value.toStdString();
        QVERIFY_THROWS_EXCEPTION(Error, g.setSettings(bad));
        QVERIFY(g.settings() == good);
        QCOMPARE(g.status().reason, before.reason);
    }

    void keyValuesRoundTrip()
    {
        GovernorSettings s;
        s.whenActive = {2, 30, 500, 1000};
        s.whenIdle = {0, 90, 0, 0};
        s.idleMinutes = 7;
        s.runOnlyWhenIdle = true;
        s.memoryCapMiB = 2048;
        s.pauseOnBattery = false;
        s.batteryResumeSeconds = 5;
        s.schedule = "weekends all day";
        const auto kv = device::toKeyValues(s);
        QCOMPARE(kv.at("active.cpu-percent"), std::string("30"));
        QCOMPARE(kv.at("run-only-when-idle"), std::string("true"));
        QCOMPARE(kv.at("schedule"), std::string("weekends all day"));
        QVERIFY(device::fromKeyValues(kv) == s);
    }

    void tableKeysAreUniqueAndCoverEveryField()
    {
        std::set<std::string_view> keys;
        for (const auto &f : device::governorSettingFields()) {
            QVERIFY2(keys.insert(f.key).second, std::string(f.key).c_str());
            QVERIFY(!f.help.empty());
        }
        // Every field maps to one key: changing one key changes exactly one field.
        QCOMPARE(keys.size(), size_t(14));
    }

    void membersFindTheirRow()
    {
        using device::Limits;
        using device::SettingMember;
        std::set<size_t> rows;
        for (const auto &f : device::governorSettingFields()) {
            QCOMPARE(&device::governorSettingField(f.member), &f); // no two rows share a member
            QCOMPARE(device::findGovernorSettingField(f.key), &f);
            rows.insert(size_t(&f - device::governorSettingFields().data()));
        }
        QCOMPARE(rows.size(), device::governorSettingFields().size());
        const auto &cpu = device::governorSettingField(SettingMember(&GovernorSettings::whenIdle, &Limits::cpuPercent));
        QCOMPARE(cpu.key, std::string_view("idle.cpu-percent"));
        QCOMPARE(int(cpu.kind()), int(device::GovernorSettingField::Kind::Integer));
        QCOMPARE(cpu.min, int64_t(1));
        QCOMPARE(cpu.max, int64_t(100));
        const auto &battery = device::governorSettingField(SettingMember(&GovernorSettings::pauseOnBattery));
        QCOMPARE(battery.key, std::string_view("pause-on-battery"));
        QCOMPARE(int(battery.kind()), int(device::GovernorSettingField::Kind::Switch));
        QCOMPARE(int(device::governorSettingField(SettingMember(&GovernorSettings::schedule)).kind()),
                 int(device::GovernorSettingField::Kind::Text));
        QVERIFY(!device::findGovernorSettingField("turbo"));
    }

    void volunteerDefaultsAreValidAndCourteous()
    {
        const GovernorSettings v = device::volunteerGovernorSettings();
        device::validate(v);
        QCOMPARE(v.whenActive.cpuPercent, int64_t(50));
        QCOMPARE(v.whenActive.uploadKiBps, int64_t(1024));
        QCOMPARE(v.whenActive.downloadKiBps, int64_t(4096));
        QCOMPARE(v.memoryCapMiB, int64_t(2048));
        QCOMPARE(v.whenIdle.cpuPercent, int64_t(100));
        QVERIFY(v.pauseOnBattery);
        QVERIFY(!v.runOnlyWhenIdle);
        QVERIFY(device::fromKeyValues(device::toKeyValues(v)) == v);
        auto withSchedule = device::toKeyValues(v);
        withSchedule["schedule"] = "mon-fri 18:00-08:00, sat-sun all day";
        device::fromKeyValues(withSchedule);
    }

    void keyValueErrors_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("unknown key") << "turbo"
                                     << "1"
                                     << "unknown governor setting 'turbo'";
        QTest::newRow("not a number") << "idle-minutes"
                                      << "five"
                                      << "must be a whole number, not 'five'";
        QTest::newRow("trailing junk") << "idle-minutes"
                                       << "5min"
                                       << "must be a whole number";
        QTest::newRow("not a bool") << "pause-on-battery"
                                    << "yes"
                                    << "must be true or false, not 'yes'";
    }

    void keyValueErrors()
    {
        QFETCH(QString, key);
        QFETCH(QString, value);
        QFETCH(QString, mentions);
        try {
            device::fromKeyValues({{key.toStdString(), value.toStdString()}});
            QFAIL("expected rookery::Error");
        } catch (const Error &e) {
            QVERIFY2(QString(e.what()).contains(mentions), e.what());
        }
    }

    void constructorRefusesBadSettings()
    {
        GovernorSettings bad;
        bad.whenIdle.cpuPercent = 101;
        QVERIFY_THROWS_EXCEPTION(Error, device::Governor(bad, fakeEnvironment()));
    }
};

QTEST_APPLESS_MAIN(TestGovernorSettings)
#include "tst_governor_settings.moc"
