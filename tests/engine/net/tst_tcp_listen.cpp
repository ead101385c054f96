// SPDX-License-Identifier: GPL-3.0-or-later
// Listening on every interface: one dual-stack socket takes IPv4 and IPv6 connections,
// and an IPv4 peer seen through it is written as IPv4. Loopback only.
#include <QtTest>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "engine/common/error.h"
#include "engine/net/tcp_listen.h"

using namespace rookery;
namespace ip = boost::asio::ip;

class TestTcpListen : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void everyInterfaceTakesIpv4AndIpv6()
    {
        boost::asio::io_context ioc;
        ip::tcp::acceptor acceptor(ioc);
        const uint16_t port = net::listenOn(acceptor, {net::bindAddress("", "listen"), 0}, "listen");
        QVERIFY(port != 0);

        ip::tcp::socket v4(ioc);
        v4.connect({ip::make_address("127.0.0.1"), port});
        ip::tcp::socket accepted(ioc);
        acceptor.accept(accepted);
        // The peer as the coordinator records it: plain IPv4, not ::ffff:127.0.0.1.
        QCOMPARE(net::endpointText(accepted.remote_endpoint()),
                 "127.0.0.1:" + std::to_string(v4.local_endpoint().port()));

        ip::tcp::socket v6(ioc);
        boost::system::error_code ec;
        v6.connect({ip::make_address("::1"), port}, ec);
        if (ec == boost::asio::error::address_family_not_supported || ec == boost::asio::error::network_unreachable)
            QSKIP("this machine has no IPv6 loopback");
        QVERIFY2(!ec, ec.message().c_str());
        ip::tcp::socket accepted6(ioc);
        acceptor.accept(accepted6);
        QCOMPARE(net::endpointText(accepted6.remote_endpoint()), "[::1]:" + std::to_string(v6.local_endpoint().port()));
    }

    void namesTheAddressesItTakes()
    {
        QVERIFY(net::isWildcardHost(""));
        QVERIFY(net::isWildcardHost("0.0.0.0"));
        QVERIFY(net::isWildcardHost("::"));
        QVERIFY(net::isWildcardHost("[::]"));
        QVERIFY(!net::isWildcardHost("127.0.0.1"));
        QCOMPARE(net::bindAddress("[::1]", "listen").to_string(), std::string("::1"));
        QCOMPARE(net::bindAddress("", "listen").to_string(), std::string("::"));
        try {
            net::bindAddress("example.org", "listen for peers");
            QFAIL("a host name is not an address to bind to");
        } catch (const Error &e) {
            QCOMPARE(std::string(e.what()), std::string("cannot listen for peers on 'example.org': not an IP address"));
        }
    }

    // --bind with an address of another machine (here one of TEST-NET-1, which no
    // interface of a test machine has): the error says so and what to do instead.
    void anAddressNotOfThisMachineSaysWhatToDo()
    {
        boost::asio::io_context ioc;
        boost::asio::ip::tcp::acceptor acceptor(ioc);
        try {
            net::listenOn(acceptor, {net::bindAddress("192.0.2.1", "listen for peers"), 0}, "listen for peers");
            QFAIL("bound to an address this machine does not have");
        } catch (const Error &e) {
            const std::string what = e.what();
            QVERIFY2(what.rfind("cannot listen for peers on 192.0.2.1:0: ", 0) == 0, what.c_str());
            QVERIFY2(what.find("not one of this machine's") != std::string::npos, what.c_str());
            QVERIFY2(what.find("--public-address") != std::string::npos, what.c_str());
        }
    }
};

QTEST_APPLESS_MAIN(TestTcpListen)
#include "tst_tcp_listen.moc"
