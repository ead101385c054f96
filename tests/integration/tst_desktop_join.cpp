// SPDX-License-Identifier: GPL-3.0-or-later
// The desktop app at home joins a swarm on the emulated internet (issue 15): the real
// window, driven through its join dialog, with the real in-process engine, behind home
// router B (NAT, no UPnP), while the coordinator runs on the public segment and a
// headless node sits behind the same router. The join card shows each step: a join
// string whose pin is wrong stops at "connected" with what to do; the right one gets
// through connected, registered, reachable ("not directly": nobody can dial the app)
// and assigned; then the app and its neighbour, neither of which can be dialled, train
// over a link through the coordinator's relay.
// Writes the card and the window as PNGs into $ROOKERY_SCREENSHOT_DIR when it is set
// (docs/screenshots/join-steps.png comes from there).
// Needs root; ROOKERY_SKIP_NETNS=1 skips it where it cannot run.
#include <QtTest>

#include <atomic>
#include <memory>

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QTemporaryDir>

#include "engine/host/node_engine.h"
#include "engine/net/coordinator_address.h"
#include "tests/engine/net/netns_lab.h"
#include "tests/support/emulated_internet.h"
#include "tests/support/test_support.h"
#include "ui/cards/assignment_card.h"
#include "ui/cards/join_card.h"
#include "ui/join/join_dialog.h"
#include "ui/main/desktop_controller.h"
#include "ui/main/main_window.h"
#include "ui/theme/theme.h"

using namespace rookery;
using namespace std::chrono_literals;
using Site = test::EmulatedInternet::Site;
namespace in = test::internet;

namespace {

QString absoluteProgram(const QString &name) { return QFileInfo(test::programPath(name)).absoluteFilePath(); }

enum Step { Connect = 0, Register, Reach, Assign };

} // namespace

class TestDesktopJoin : public QObject
{
    Q_OBJECT

    std::unique_ptr<test::EmulatedInternet> m_net;
    test::NetnsProcess *m_coordinator = nullptr;
    test::NetnsProcess *m_peer = nullptr;
    QString m_join;
    std::unique_ptr<test::NetnsScope> m_home; // the app's threads live behind router B
    QTemporaryDir m_appDir;
    std::unique_ptr<QSettings> m_settings;
    std::shared_ptr<host::NodeEngine> m_engine;
    std::unique_ptr<ui::DesktopController> m_app;

    QString logs() const
    {
        QString text;
        if (m_coordinator)
            text += "\n--- coordinator ---\n" + m_coordinator->output().right(4000);
        if (m_peer)
            text += "\n--- node B2 ---\n" + m_peer->output().right(3000);
        if (m_app)
            for (int i = 0; i < ui::JoinCard::kSteps; ++i)
                text += "\n--- step " + QString::number(i) + ": " + stepState(i) + ": " + stepText(i);
        return text;
    }
    ui::JoinCard *card() const { return m_app->window()->joinCard(); }
    QString stepState(int i) const { return card()->stepLabel(i)->property("joinState").toString(); }
    QString stepText(int i) const { return card()->stepLabel(i)->accessibleDescription(); }

    // Through the join dialog, as a person does it.
    void joinWith(const QString &joinString)
    {
        m_app->openJoin();
        ui::JoinDialog *dialog = m_app->joinDialog();
        QVERIFY(dialog);
        dialog->addressButton()->setChecked(true);
        dialog->addressEdit()->setText(joinString);
        QVERIFY2(dialog->startButton()->isEnabled(), qPrintable(joinString));
        dialog->startButton()->click();
    }
    static void saveScreenshot(QWidget *w, const QString &name)
    {
        const QString dir = qEnvironmentVariable("ROOKERY_SCREENSHOT_DIR");
        if (dir.isEmpty())
            return;
        QDir().mkpath(dir);
        QTest::qWait(300); // let the last snapshot paint
        QVERIFY(w->grab().save(dir + QLatin1Char('/') + name));
    }
    bool waitForStep(int i, const QString &state, std::chrono::milliseconds timeout)
    {
        return test::waitFor([&] { return stepState(i) == state; }, timeout);
    }

private Q_SLOTS:
    void initTestCase()
    {
        ROOKERY_REQUIRE_EMULATED_INTERNET();
        m_net = std::make_unique<test::EmulatedInternet>();
        QVERIFY2(m_net->error().isEmpty(), qPrintable("emulated internet: " + m_net->error()));
        // Two volunteers make one pipeline of two stages; the plan waits for both.
        QString why;
        m_join = m_net->startCoordinator(absoluteProgram(QStringLiteral("rookery-coordinator")),
                                         {"--port", "7400", "--expect-nodes", "2", "--cluster-size", "2",
                                          "--first-plan-delay-ms", "60000", "--steps", "100000",
                                          "--reachability-timeout", "3"},
                                         &m_coordinator, &why);
        QVERIFY2(!m_join.isEmpty(), qPrintable(why + logs()));
        // Its neighbour sits behind the same router: neither can be dialled, so their
        // pipeline link goes through the coordinator's relay.
        m_peer = &m_net->start(Site::HomeB2, QStringLiteral("B2"), absoluteProgram(QStringLiteral("rookery-node")),
                               {"--join", m_join, "--data-dir", m_net->filePath(QStringLiteral("B2")), "--name", "B2",
                                "--dataset-dir", QString::fromStdString(test::fashionMnistDir().string()), "--threads",
                                "1", "--no-control"});

        // The app: everything it starts from here on runs in home B1's namespace.
        m_home = std::make_unique<test::NetnsScope>(m_net->ns(Site::HomeB1));
        QVERIFY(m_home->entered());
        m_settings =
            std::make_unique<QSettings>(m_appDir.filePath(QStringLiteral("rookery.ini")), QSettings::IniFormat);
        m_settings->setValue(QStringLiteral("consent/given"), true);
        m_settings->setValue(QStringLiteral("consent/version"), 1);
        host::NodeEngineSettings s = host::defaultNodeEngineSettings();
        s.dataDir = m_appDir.filePath(QStringLiteral("data")).toStdString();
        s.datasetDir = test::fashionMnistDir();
        s.binDir = QFileInfo(test::programPath(QStringLiteral("rookery-node"))).absolutePath().toStdString();
        s.measureAtConsent = false; // the node measures before it registers
        m_engine = std::make_shared<host::NodeEngine>(s);
        ui::DesktopOptions options;
        options.trayAvailable = false;
        ui::applyTheme(ui::Theme::Light);
        m_app = std::make_unique<ui::DesktopController>(m_engine, *m_settings, options);
        m_app->start();
        m_app->window()->resize(1280, 800);
        m_app->window()->show();
        QVERIFY(card()->isHidden()); // nothing joined yet
    }

    void aWrongPinStopsAtConnectedAndSaysWhatToDo()
    {
        auto wrong = net::CoordinatorAddress::parse(m_join.toStdString());
        wrong.sha256 = std::string(64, '0');
        joinWith(QString::fromStdString(wrong.toString()));
        QVERIFY2(waitForStep(Connect, QStringLiteral("failed"), 60s), qPrintable(logs()));
        QVERIFY(!card()->isHidden());
        QVERIFY2(stepText(Connect).contains(QStringLiteral("join string")), qPrintable(logs()));
        QVERIFY2(stepText(Connect).contains(QLatin1String(in::kCoordinator) + QStringLiteral(":7400")),
                 qPrintable(logs()));
        QCOMPARE(stepState(Register), QStringLiteral("pending"));
        // It does not retry a certificate that is not the pinned one: the job ends, the
        // steps stay to say why.
        QVERIFY2(test::waitFor([&] { return !m_engine->snapshot().running; }, 30s), qPrintable(logs()));
        QCOMPARE(stepState(Connect), QStringLiteral("failed"));
        saveScreenshot(card(), QStringLiteral("join-steps-failed.png"));
    }

    void theJoinStringGetsThroughEveryStep()
    {
        joinWith(m_join);
        QVERIFY2(waitForStep(Connect, QStringLiteral("done"), 60s), qPrintable(logs()));
        QVERIFY2(waitForStep(Register, QStringLiteral("done"), 60s), qPrintable(logs()));
        // Home B has no UPnP and masquerades: the coordinator cannot dial the app back.
        QVERIFY2(waitForStep(Reach, QStringLiteral("relayed"), 60s), qPrintable(logs()));
        QVERIFY2(stepText(Reach).contains(QStringLiteral("cannot connect to this computer")), qPrintable(logs()));
        QVERIFY2(waitForStep(Assign, QStringLiteral("done"), 120s), qPrintable(logs()));
        QVERIFY2(stepText(Assign).contains(QStringLiteral("of 2 in cluster 1 of 1")), qPrintable(logs()));
        QCOMPARE(stepState(Connect), QStringLiteral("done"));
        QVERIFY2(stepText(Connect).contains(QLatin1String(in::kCoordinator) + QStringLiteral(":7400")),
                 qPrintable(logs()));
        // The assignment card agrees.
        QVERIFY(m_app->window()->assignmentCard()->reachLabel()->text().startsWith(QStringLiteral("not directly")));
        // The app and B2 link through the coordinator's relay, and the pipeline trains.
        QVERIFY2(test::waitFor(
                     [&] {
                         return m_coordinator->output().contains(QStringLiteral("relaying ")) &&
                                m_engine->snapshot().training.step > 0;
                     },
                     120s),
                 qPrintable(logs()));

        saveScreenshot(card(), QStringLiteral("join-steps.png"));
        saveScreenshot(m_app->window(), QStringLiteral("join-steps-window.png"));
    }

    void cleanupTestCase()
    {
        // The app leaves first (it checkpoints), while its namespace still exists.
        if (m_engine && m_engine->snapshot().running) {
            std::atomic<bool> stopped{false};
            m_engine->stopTraining([&](const std::string &) { stopped = true; });
            test::waitFor([&] { return stopped.load(); }, 60s);
        }
        m_app.reset();
        m_engine.reset();
        m_home.reset();
        m_net.reset();
    }
};

QTEST_MAIN(TestDesktopJoin)
#include "tst_desktop_join.moc"
