// SPDX-License-Identifier: GPL-3.0-or-later
#include <QtTest>

#include "engine/common/error.h"
#include "engine/device/schedule.h"

using namespace rookery;
using device::Schedule;
using device::WeekTime;

namespace {

// "sat 07:59" -> WeekTime.
WeekTime at(const QString &text)
{
    static const QStringList days = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
    const auto parts = text.split(' ');
    const auto hm = parts[1].split(':');
    return {int(days.indexOf(parts[0])), hm[0].toInt() * 60 + hm[1].toInt()};
}

} // namespace

class TestSchedule : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void emptyMeansAlways()
    {
        for (const char *text : {"", "  ", "always", "ALWAYS"}) {
            const Schedule s = Schedule::parse(text);
            QVERIFY(s.always());
            QVERIFY(!s.nextChange(at("wed 12:00")));
        }
        QVERIFY(Schedule().always());
    }

    void allows_data()
    {
        QTest::addColumn<QString>("schedule");
        QTest::addColumn<QString>("when");
        QTest::addColumn<bool>("allowed");
        const QString evenings = "mon-fri 18:00-08:00, sat-sun all day";
        QTest::newRow("weekday evening") << evenings << "tue 18:00" << true;
        QTest::newRow("weekday before evening") << evenings << "tue 17:59" << false;
        QTest::newRow("overnight belongs to start day") << evenings << "wed 07:59" << true;
        QTest::newRow("overnight ends") << evenings << "wed 08:00" << false;
        QTest::newRow("monday morning is sunday's all day") << evenings << "mon 07:00" << false;
        QTest::newRow("friday night runs into saturday") << evenings << "sat 03:00" << true;
        QTest::newRow("sunday all day") << evenings << "sun 23:59" << true;
        QTest::newRow("no days: every day") << "09:00-17:00"
                                            << "sun 09:00" << true;
        QTest::newRow("end is exclusive") << "09:00-17:00"
                                          << "sun 17:00" << false;
        QTest::newRow("24:00 end") << "mon 22:00-24:00"
                                   << "mon 23:59" << true;
        QTest::newRow("24:00 end stops at midnight") << "mon 22:00-24:00"
                                                     << "tue 00:00" << false;
        QTest::newRow("wrapping day range") << "fri-mon 10:00-11:00"
                                            << "sun 10:30" << true;
        QTest::newRow("wrapping day range excludes") << "fri-mon 10:00-11:00"
                                                     << "wed 10:30" << false;
        QTest::newRow("several day groups") << "mon wed fri 8:00-9:00"
                                            << "wed 08:30" << true;
        QTest::newRow("several day groups exclude") << "mon wed fri 8:00-9:00"
                                                    << "thu 08:30" << false;
        QTest::newRow("weekends word") << "weekends all day"
                                       << "sat 12:00" << true;
        QTest::newRow("weekdays word") << "weekdays 12:00-13:00"
                                       << "sat 12:30" << false;
        QTest::newRow("full names, any case") << "Saturday 12:00-13:00"
                                              << "sat 12:30" << true;
        QTest::newRow("sunday overnight wraps the week") << "sun 23:00-01:00"
                                                         << "mon 00:30" << true;
        QTest::newRow("semicolons separate") << "mon 01:00-02:00; tue 01:00-02:00"
                                             << "tue 01:30" << true;
        QTest::newRow("daily") << "daily 06:00-07:00"
                               << "thu 06:59" << true;
    }

    void allows()
    {
        QFETCH(QString, schedule);
        QFETCH(QString, when);
        QFETCH(bool, allowed);
        const Schedule s = Schedule::parse(schedule.toStdString());
        QCOMPARE(s.allows(at(when)), allowed);
        QCOMPARE(s.text(), schedule.trimmed().toStdString());
    }

    void nextChange()
    {
        const Schedule s = Schedule::parse("mon-fri 18:00-08:00");
        QCOMPARE(s.nextChange(at("mon 12:00")).value(), at("mon 18:00"));
        QCOMPARE(s.nextChange(at("mon 18:00")).value(), at("tue 08:00"));
        QCOMPARE(s.nextChange(at("sat 09:00")).value(), at("mon 18:00")); // wraps the week
        QCOMPARE(at("mon 18:00").describe(), std::string("mon 18:00"));
    }

    void rejectsMalformed_data()
    {
        QTest::addColumn<QString>("schedule");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("unknown day") << "mnday 18:00-20:00"
                                     << "'mnday' is not a day";
        QTest::newRow("bad hour") << "mon 25:00-26:00"
                                  << "'25:00' is not a time";
        QTest::newRow("bad minutes") << "mon 10:60-11:00"
                                     << "'10:60' is not a time";
        QTest::newRow("24:30") << "mon 10:00-24:30"
                               << "'24:30' is not a time";
        QTest::newRow("no span") << "mon-fri"
                                 << "is not a time span";
        QTest::newRow("words for time") << "mon noon-evening"
                                        << "'noon-evening' is not a time span";
        QTest::newRow("signs") << "mon +8:00-09:00"
                               << "'+8:00' is not a time";
        QTest::newRow("empty span") << "mon 10:00-10:00"
                                    << "is empty";
        QTest::newRow("start at 24:00") << "mon 24:00-01:00"
                                        << "cannot start at 24:00";
        QTest::newRow("empty rule") << "mon 10:00-11:00,, tue 10:00-11:00"
                                    << "an empty rule";
        QTest::newRow("trailing comma") << "mon 10:00-11:00,"
                                        << "trailing separator";
        QTest::newRow("all without day") << "mon all"
                                         << "is not a time span";
    }

    void rejectsMalformed()
    {
        QFETCH(QString, schedule);
        QFETCH(QString, mentions);
        try {
            Schedule::parse(schedule.toStdString());
            QFAIL("expected rookery::Error");
        } catch (const Error &e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains(mentions), e.what());
            QVERIFY2(message.startsWith("schedule: "), e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestSchedule)
#include "tst_schedule.moc"
