// SPDX-License-Identifier: GPL-3.0-or-later
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include <sys/stat.h>

#include "engine/common/error.h"
#include "engine/net/certificate_authority.h"
#include "engine/net/coordinator_address.h"
#include "engine/net/identity.h"

using namespace rookery;
using namespace rookery::net;
namespace fs = std::filesystem;

namespace {

void expectError(const std::function<void()> &fn, const QString &mentions)
{
    try {
        fn();
        QFAIL("expected rookery::Error");
    } catch (const Error &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(mentions), e.what());
    }
}

unsigned modeOf(const fs::path &p)
{
    struct stat st = {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 0777;
}

const std::string kPin(64, 'a');

} // namespace

class TestIdentity : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    fs::path dir(const char *name) const { return fs::path(m_dir.path().toStdString()) / name; }

private Q_SLOTS:
    void keyIsCreatedPrivateAndReloaded()
    {
        const auto first = Identity::loadOrCreate(dir("node"));
        QCOMPARE(modeOf(Identity::keyPath(dir("node"))), 0600u);
        QCOMPARE(modeOf(dir("node")), 0700u);
        QCOMPARE(first.nodeId().size(), size_t(64));
        const auto again = Identity::loadOrCreate(dir("node"));
        QCOMPARE(again.nodeId(), first.nodeId());
        QCOMPARE(publicKeyFingerprint(again.publicKeyPem()), first.nodeId());
        QVERIFY(Identity::generate().nodeId() != first.nodeId());
    }

    void readableKeyIsRefused()
    {
        Identity::loadOrCreate(dir("shared"));
        const auto key = Identity::keyPath(dir("shared"));
        ::chmod(key.c_str(), 0644);
        expectError([&] { Identity::loadOrCreate(dir("shared")); }, "other users may read it (mode 0644)");
        expectError([&] { Identity::loadOrCreate(dir("shared")); }, "chmod 600");
        ::chmod(key.c_str(), 0640);
        expectError([&] { Identity::loadOrCreate(dir("shared")); }, "mode 0640");
    }

    void damagedKeyIsRefusedNotReplaced()
    {
        fs::create_directories(dir("damaged"));
        const auto key = Identity::keyPath(dir("damaged"));
        std::ofstream(key) << "not a key";
        ::chmod(key.c_str(), 0600);
        expectError([&] { Identity::loadOrCreate(dir("damaged")); }, "is damaged");
        std::ifstream in(key);
        std::string text;
        std::getline(in, text);
        QCOMPARE(text, std::string("not a key"));
    }

    void caIssuesCertificatesNamedByKey()
    {
        const auto ca = CertificateAuthority::create("test");
        const auto node = Identity::generate();
        const auto cert = ca.issue(node.publicKeyPem());
        QCOMPARE(certificateNodeId(cert), node.nodeId());
        QCOMPARE(certificateFingerprint(ca.certificatePem()), ca.fingerprint());
        QVERIFY(certificateFingerprint(cert) != ca.fingerprint());
        QCOMPARE(certificateNodeId(node.selfSignedCertificate()), node.nodeId());
        expectError([&] { ca.issue("garbage"); }, "not a PEM public key");
    }

    void caIsPersisted()
    {
        const auto a = CertificateAuthority::loadOrCreate(dir("ca"), "swarm");
        QCOMPARE(modeOf(dir("ca") / "ca.key"), 0600u);
        const auto b = CertificateAuthority::loadOrCreate(dir("ca"), "swarm");
        QCOMPARE(b.fingerprint(), a.fingerprint());
        expectError([&] { CertificateAuthority::fromPem(Identity::generate().privateKeyPem(), a.certificatePem()); },
                    "does not belong");
    }

    void coordinatorAddressParses_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::addColumn<QString>("path");
        const QString pin = QString::fromStdString(kPin);
        QTest::newRow("host and port") << "wss://coord.example:7400/#sha256=" + pin << "coord.example" << 7400 << "/";
        QTest::newRow("default port") << "wss://10.0.0.1/swarm#sha256=" + pin << "10.0.0.1" << 443 << "/swarm";
        QTest::newRow("ipv6") << "wss://[::1]:9000/#sha256=" + pin << "::1" << 9000 << "/";
        QTest::newRow("colons and case") << "wss://h:1/#sha256=" + pin.toUpper().replace("AA", "AA:").chopped(0) << "h"
                                         << 1 << "/";
    }

    void coordinatorAddressParses()
    {
        QFETCH(QString, text);
        QFETCH(QString, host);
        QFETCH(int, port);
        QFETCH(QString, path);
        const auto a = CoordinatorAddress::parse(text.toStdString());
        QCOMPARE(QString::fromStdString(a.host), host);
        QCOMPARE(int(a.port), port);
        QCOMPARE(QString::fromStdString(a.path), path);
        QCOMPARE(a.sha256, kPin);
        QCOMPARE(CoordinatorAddress::parse(a.toString()), a);
    }

    void badCoordinatorAddressesAreRefused_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("mentions");
        const QString pin = QString::fromStdString(kPin);
        QTest::newRow("no pin") << "wss://h:1/"
                                << "#sha256";
        QTest::newRow("plain ws") << "ws://h:1/#sha256=" + pin << "wss://";
        QTest::newRow("short pin") << "wss://h:1/#sha256=abcd"
                                   << "64 hexadecimal";
        QTest::newRow("not hex") << "wss://h:1/#sha256=" + pin.chopped(1) + "g"
                                 << "64 hexadecimal";
        QTest::newRow("other fragment") << "wss://h:1/#md5=" + pin << "sha256=";
        QTest::newRow("bad port") << "wss://h:99999/#sha256=" + pin << "port";
        QTest::newRow("empty port") << "wss://h:/#sha256=" + pin << "port";
        QTest::newRow("no host") << "wss://:1/#sha256=" + pin << "no host";
        QTest::newRow("userinfo") << "wss://u@h:1/#sha256=" + pin << "'@'";
    }

    void badCoordinatorAddressesAreRefused()
    {
        QFETCH(QString, text);
        QFETCH(QString, mentions);
        expectError([&] { CoordinatorAddress::parse(text.toStdString()); }, mentions);
    }
};

QTEST_APPLESS_MAIN(TestIdentity)
#include "tst_identity.moc"
