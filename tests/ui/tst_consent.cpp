// SPDX-License-Identifier: GPL-3.0-or-later
// Consent gates compute: before it, no start command reaches the engine, whatever the
// person clicks; giving it starts the work; withdrawing it tells the engine to stop.
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QTextBrowser>
#include <QtTest>

#include "tests/ui/ui_fixture.h"
#include "ui/consent/consent_dialog.h"
#include "ui/consent/consent_text.h"
#include "ui/join/join_dialog.h"
#include "ui/main/status_banner.h"
#include "ui/settings/settings_dialog.h"
#include "ui/settings/settings_fields.h"

using namespace rookery;

class TestConsent : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void firstRunAsksAndStartsNothing()
    {
        test::UiFixture f;
        f.storeDemoChoice(); // even with work remembered
        auto &c = f.start();
        QVERIFY(f.engine->received("consent:false"));
        QVERIFY(!f.engine->receivedStart());
        QVERIFY(c.consentDialog());
        QVERIFY(c.consentDialog()->isVisible());
        QCOMPARE(f.window()->banner()->headlineLabel()->text(), QStringLiteral("Waiting for your consent"));
        QVERIFY(!f.window()->actions().pauseResume->isEnabled());
        QVERIFY(!f.window()->actions().start->isEnabled());

        // Every door to compute leads back to the consent screen.
        c.openJoin();
        c.startChoice(ui::JoinChoice{});
        f.window()->actions().start->trigger();
        f.window()->banner()->actionButton()->click();
        f.sync();
        QVERIFY(!f.engine->receivedStart());
        QVERIFY(!c.joinDialog());

        // "Not now" leaves everything stopped and unconsented.
        c.consentDialog()->declineButton()->click();
        f.sync();
        QVERIFY(!c.consentDialog());
        QVERIFY(!f.engine->receivedStart());
        QVERIFY(!ui::ConsentStore(*f.settings).given());
    }

    void agreeingStartsTheWork()
    {
        test::UiFixture f;
        auto &c = f.start();
        c.consentDialog()->agreeButton()->click();
        f.sync();
        QVERIFY(ui::ConsentStore(*f.settings).given());
        QVERIFY(f.engine->state().consentGiven);
        // No work remembered: the person chooses it.
        QVERIFY(c.joinDialog());
        QVERIFY(!f.engine->receivedStart());
        c.joinDialog()->demoButton()->setChecked(true);
        c.joinDialog()->startButton()->click();
        f.sync();
        const auto commands = f.engine->commands();
        const auto consent = std::find(commands.begin(), commands.end(), "consent:true");
        const auto start = std::find(commands.begin(), commands.end(), "demo-swarm:4");
        QVERIFY(consent != commands.end());
        QVERIFY(start != commands.end());
        QVERIFY(consent < start);
        QVERIFY(f.engine->state().running);
    }

    void storedConsentResumesTheRememberedWork()
    {
        test::UiFixture f;
        f.storeConsent();
        f.storeDemoChoice();
        auto &c = f.start();
        QVERIFY(!c.consentDialog());
        QVERIFY(f.engine->received("consent:true"));
        QVERIFY(f.engine->received("demo-swarm:4"));
        QCOMPARE(f.window()->banner()->headlineLabel()->text(), QStringLiteral("Training"));
    }

    void withdrawingStops()
    {
        test::UiFixture f;
        f.storeConsent();
        f.storeDemoChoice();
        auto &c = f.start();
        QVERIFY(f.engine->state().running);
        c.withdrawConsent();
        f.sync();
        QCOMPARE(f.engine->commands().back(), std::string("consent:false"));
        QVERIFY(!f.engine->state().running);
        QVERIFY(!ui::ConsentStore(*f.settings).given());
        QCOMPARE(f.window()->banner()->headlineLabel()->text(), QStringLiteral("Waiting for your consent"));
        QVERIFY(!f.window()->actions().pauseResume->isEnabled());

        // And it stays withdrawn across a restart.
        test::UiFixture again;
        again.settings = std::make_unique<QSettings>(f.settings->fileName(), QSettings::IniFormat);
        again.start();
        QVERIFY(!again.engine->receivedStart());
        QVERIFY(again.controller->consentDialog());
    }

    void withdrawingFromTheMenuAsksFirst()
    {
        test::UiFixture f;
        f.storeConsent();
        f.storeDemoChoice();
        f.start();
        QCOMPARE(f.window()->actions().consent->text(), QStringLiteral("&Withdraw consent…"));
        f.window()->actions().consent->trigger();
        QMessageBox *box = test::openMessageBox(f.window());
        QVERIFY(box);
        QVERIFY(test::clickButton(box, QStringLiteral("Cancel")));
        f.sync();
        QVERIFY(f.engine->state().consentGiven);

        f.window()->actions().consent->trigger();
        box = test::openMessageBox(f.window());
        QVERIFY(box);
        QVERIFY(test::clickButton(box, QStringLiteral("Withdraw")));
        f.sync();
        QVERIFY(!f.engine->state().consentGiven);
        QCOMPARE(f.window()->actions().consent->text(), QStringLiteral("Give &consent…"));
    }

    void withdrawingFromSettings()
    {
        test::UiFixture f;
        f.storeConsent();
        auto &c = f.start();
        c.openSettings();
        QVERIFY(c.settingsDialog());
        c.settingsDialog()->consentButton()->click();
        QMessageBox *box = test::openMessageBox(c.settingsDialog());
        QVERIFY(box);
        QVERIFY(test::clickButton(box, QStringLiteral("Withdraw")));
        f.sync();
        QVERIFY(!f.engine->state().consentGiven);
        QCOMPARE(c.settingsDialog()->consentButton()->accessibleName(), QStringLiteral("Review and give consent"));
    }

    void theTextSaysWhatRunsWhatLeavesAndTheLimits()
    {
        auto limits = ui::defaultGovernorSettings();
        limits["active.cpu-percent"] = "35";
        ui::ConsentDialog dialog(limits);
        const QString text = dialog.findChild<QTextBrowser *>()->toPlainText();
        for (const char *needle : {"What will run", "processor", "What leaves this computer", "activations",
                                   "gradients", "weights", "coordinator", "device profile", "throughput",
                                   "Never your personal files", "Default limits", "CPU time: 35 %", "withdraw"})
            QVERIFY2(text.contains(QLatin1String(needle), Qt::CaseInsensitive), needle);
    }
};

QTEST_MAIN(TestConsent)
#include "tst_consent.moc"
