// SPDX-License-Identifier: GPL-3.0-or-later
// SysfsPowerSource on fake /sys/class/power_supply trees.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "engine/device/power_source.h"

using namespace rookery;
namespace fs = std::filesystem;

namespace {

void supply(const fs::path &root, const std::string &name, std::map<std::string, std::string> attributes)
{
    fs::create_directories(root / name);
    for (const auto &[file, value] : attributes)
        std::ofstream(root / name / file) << value << "\n";
}

} // namespace

class TestPowerSource : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void reads_data()
    {
        QTest::addColumn<QString>("machine");
        QTest::addColumn<bool>("hasBattery");
        QTest::addColumn<bool>("onBattery");
        QTest::addColumn<int>("percent"); // -1: none
        QTest::newRow("desktop") << "desktop" << false << false << -1;
        QTest::newRow("laptop charging") << "charging" << true << false << 70;
        QTest::newRow("laptop on battery") << "discharging" << true << true << 38;
        QTest::newRow("two batteries") << "two" << true << true << 50;
        QTest::newRow("mouse battery only") << "mouse" << false << false << -1;
        QTest::newRow("discharging with AC online") << "quirk" << true << false << 90;
        QTest::newRow("USB-C power") << "usbc" << true << false << 60;
        QTest::newRow("garbage capacity") << "garbage" << true << true << -1;
        QTest::newRow("no battery, no mains") << "empty" << false << false << -1;
        QTest::newRow("no such directory") << "missing" << false << false << -1;
    }

    void reads()
    {
        QFETCH(QString, machine);
        QFETCH(bool, hasBattery);
        QFETCH(bool, onBattery);
        QFETCH(int, percent);
        QTemporaryDir dir;
        const fs::path root = fs::path(dir.path().toStdString()) / "power_supply";
        const std::string m = machine.toStdString();
        if (m != "missing")
            fs::create_directories(root);
        if (m == "desktop")
            supply(root, "AC", {{"type", "Mains"}, {"online", "1"}});
        if (m == "charging") {
            supply(root, "AC", {{"type", "Mains"}, {"online", "1"}});
            supply(root, "BAT0", {{"type", "Battery"}, {"status", "Charging"}, {"capacity", "70"}});
        }
        if (m == "discharging") {
            supply(root, "AC", {{"type", "Mains"}, {"online", "0"}});
            supply(root, "BAT0", {{"type", "Battery"}, {"status", "Discharging"}, {"capacity", "38"}});
        }
        if (m == "two") {
            supply(root, "BAT0", {{"type", "Battery"}, {"status", "Discharging"}, {"capacity", "40"}});
            supply(root, "BAT1", {{"type", "Battery"}, {"status", "Not charging"}, {"capacity", "60"}});
        }
        if (m == "mouse")
            supply(root, "hidpp_battery_0",
                   {{"type", "Battery"}, {"scope", "Device"}, {"status", "Discharging"}, {"capacity", "10"}});
        if (m == "quirk") {
            supply(root, "ADP1", {{"type", "Mains"}, {"online", "1"}});
            supply(root, "BAT0", {{"type", "Battery"}, {"status", "Discharging"}, {"capacity", "90"}});
        }
        if (m == "usbc") {
            supply(root, "ucsi-source-psy-USBC000:001", {{"type", "USB"}, {"online", "1"}});
            supply(root, "BAT0", {{"type", "Battery"}, {"status", "Discharging"}, {"capacity", "60"}});
        }
        if (m == "garbage")
            supply(root, "BAT0", {{"type", "Battery"}, {"status", "Discharging"}, {"capacity", "lots"}});
        if (m == "empty")
            fs::create_directories(root / "not-a-supply");

        device::SysfsPowerSource source(root);
        const device::PowerState s = source.read();
        QCOMPARE(s.hasBattery, hasBattery);
        QCOMPARE(s.onBattery, onBattery);
        QCOMPARE(s.batteryPercent.value_or(-1), percent);
    }

    void followsChanges()
    {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        supply(root, "AC", {{"type", "Mains"}, {"online", "1"}});
        supply(root, "BAT0", {{"type", "Battery"}, {"status", "Charging"}, {"capacity", "55"}});
        device::SysfsPowerSource source(root);
        QVERIFY(!source.read().onBattery);
        supply(root, "AC", {{"online", "0"}});
        supply(root, "BAT0", {{"status", "Discharging"}, {"capacity", "54"}});
        QVERIFY(source.read().onBattery);
        QCOMPARE(source.read().batteryPercent.value(), 54);
    }
};

QTEST_APPLESS_MAIN(TestPowerSource)
#include "tst_power_source.moc"
