// SPDX-License-Identifier: GPL-3.0-or-later
// A node that was given no name shows others a nickname drawn from its key: stable for
// one key, different across keys, and nothing of the machine in it.
#include <QtTest>

#include <set>
#include <unistd.h>

#include "engine/net/nickname.h"

using rookery::net::nicknameFor;

class TestNickname : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sameKeySameName()
    {
        const std::string id(64, 'a');
        QCOMPARE(nicknameFor(id), nicknameFor(id));
        QVERIFY(nicknameFor(id) != nicknameFor(std::string(63, 'a') + "b")); // the whole id counts
    }

    void namesLookLikeNicknames()
    {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        std::set<std::string> seen;
        for (int i = 0; i < 200; ++i) {
            char id[65];
            std::snprintf(id, sizeof id, "%064x", i * 2654435761u);
            const std::string name = nicknameFor(id);
            QVERIFY2(std::count(name.begin(), name.end(), '-') == 2, name.c_str());
            QVERIFY(name.size() <= 24);
            QVERIFY(std::string(host).empty() || name.find(host) == std::string::npos);
            seen.insert(name);
        }
        QVERIFY2(seen.size() >= 190, "200 keys should give nearly 200 nicknames");
    }
};

QTEST_APPLESS_MAIN(TestNickname)
#include "tst_nickname.moc"
