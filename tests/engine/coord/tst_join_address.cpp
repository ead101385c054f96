// SPDX-License-Identifier: GPL-3.0-or-later
// The join string a running coordinator leaves in its data directory for
// `rookery-coordinator invite`, and what reading it says when there is none.
#include <QtTest>

#include <QTemporaryDir>

#include <fstream>

#include "engine/common/error.h"
#include "engine/coord/coordinator.h"
#include "engine/coord/join_address.h"
#include "tests/engine/coord/coord_test_support.h"

using namespace rookery;

class TestJoinAddress : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aRunningCoordinatorLeavesItsJoinString()
    {
        QTemporaryDir dir;
        coord::Coordinator c(test::testSettings(dir.path().toStdString()));
        const std::string join = coord::readJoinAddress(dir.path().toStdString());
        QCOMPARE(join, c.address());
        QCOMPARE(net::CoordinatorAddress::parse(join).sha256, c.coordinatorAddress().sha256); // the pin travels
        const auto other =
            net::CoordinatorAddress::parse(coord::readJoinAddress(dir.path().toStdString(), "swarm.example.org"));
        QCOMPARE(other.host, std::string("swarm.example.org"));
        QCOMPARE(other.port, c.port());
        // The status API shows the same string.
        QVERIFY(c.statusJson().find("\"join\":\"" + join + "\"") != std::string::npos);
    }

    void noneOrDamagedIsSaidPlainly()
    {
        QTemporaryDir dir;
        try {
            coord::readJoinAddress(dir.path().toStdString());
            QFAIL("read a join string that was never written");
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find("start rookery-coordinator with --data-dir") != std::string::npos,
                     e.what());
        }
        std::ofstream(coord::joinAddressPath(dir.path().toStdString())) << "http://nothing\n";
        try {
            coord::readJoinAddress(dir.path().toStdString());
            QFAIL("read a damaged join string");
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find("is damaged") != std::string::npos, e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestJoinAddress)
#include "tst_join_address.moc"
