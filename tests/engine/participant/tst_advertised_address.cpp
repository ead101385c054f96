// SPDX-License-Identifier: GPL-3.0-or-later
// The listening address a node tells the coordinator: what the coordinator sees, the
// address it binds, or the --public-address the volunteer gives; bad input named.
#include <QtTest>

#include "engine/common/error.h"
#include "engine/participant/node_preparation.h"

using namespace rookery;
using participant::advertisedAddress;

class TestAdvertisedAddress : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void advertises()
    {
        QCOMPARE(advertisedAddress("", "", 4100), std::string(":4100")); // the coordinator fills in the host
        QCOMPARE(advertisedAddress("0.0.0.0", "", 4100), std::string(":4100"));
        QCOMPARE(advertisedAddress("::", "", 4100), std::string(":4100"));
        QCOMPARE(advertisedAddress("192.0.2.7", "", 4100), std::string("192.0.2.7:4100"));
        QCOMPARE(advertisedAddress("2001:db8::7", "", 4100), std::string("[2001:db8::7]:4100"));
        QCOMPARE(advertisedAddress("", "node.example.org", 4100), std::string("node.example.org:4100"));
        QCOMPARE(advertisedAddress("", "203.0.113.9:51000", 4100), std::string("203.0.113.9:51000"));
        QCOMPARE(advertisedAddress("", "2001:db8::9", 4100), std::string("[2001:db8::9]:4100"));
        QCOMPARE(advertisedAddress("", "[2001:db8::9]:443", 4100), std::string("[2001:db8::9]:443"));
        QCOMPARE(advertisedAddress("", "[2001:db8::9]", 4100), std::string("[2001:db8::9]:4100"));
    }

    void refusesBadPublicAddresses_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("problem");
        QTest::newRow("no host") << ":4100"
                                 << "has no host";
        QTest::newRow("wildcard") << "0.0.0.0"
                                  << "has no host";
        QTest::newRow("empty port") << "host:"
                                    << "has an empty port";
        QTest::newRow("port text") << "host:http"
                                   << "has a bad port 'http'";
        QTest::newRow("port zero") << "host:0"
                                   << "has a port outside 1-65535";
        QTest::newRow("port too big") << "host:70000"
                                      << "has a port outside 1-65535";
        QTest::newRow("path") << "host/x"
                              << "has a character no host name has";
        QTest::newRow("space") << "my host"
                               << "has a character no host name has";
        QTest::newRow("open bracket") << "[2001:db8::9"
                                      << "is not host or host:port";
    }

    void refusesBadPublicAddresses()
    {
        QFETCH(QString, text);
        QFETCH(QString, problem);
        try {
            advertisedAddress("", text.toStdString(), 4100);
            QFAIL("accepted a bad --public-address");
        } catch (const Error &e) {
            const std::string expected = "--public-address '" + text.toStdString() + "' " + problem.toStdString();
            QVERIFY2(std::string(e.what()).rfind(expected, 0) == 0, e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestAdvertisedAddress)
#include "tst_advertised_address.moc"
