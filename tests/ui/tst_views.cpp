// SPDX-License-Identifier: GPL-3.0-or-later
// The views follow engine snapshots: cards, chart points (one per new snapshot, none per
// repeat), the peer graph (items, colours, tooltips, links; rebuilt only when the
// swarm's shape changes), the checkpoint list with its confirmations, the event log.
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTreeWidget>
#include <QtTest>

#include "tests/ui/ui_fixture.h"
#include "ui/cards/assignment_card.h"
#include "ui/cards/contribution_card.h"
#include "ui/cards/device_card.h"
#include "ui/cards/join_card.h"
#include "ui/charts/metric_chart.h"
#include "ui/charts/training_charts.h"
#include "ui/checkpoints/checkpoint_list.h"
#include "ui/join/join_dialog.h"
#include "ui/log/event_log_filter.h"
#include "ui/log/event_log_model.h"
#include "ui/log/event_log_view.h"
#include "ui/main/status_banner.h"
#include "ui/peers/peer_graph_view.h"
#include "ui/peers/peer_layout.h"
#include "ui/peers/peer_node_item.h"
#include "ui/theme/theme.h"

using namespace rookery;
using namespace std::chrono_literals;
using Kind = host::PeerLinkView::Kind;
using Level = host::EngineEvent::Level;

namespace {

/// Two clusters of two stages, this computer in cluster 1 stage 2.
host::EngineSnapshot swarmSnapshot()
{
    host::EngineSnapshot s;
    s.consentGiven = true;
    s.running = true;
    s.device.measured = true;
    s.device.cpuModel = "Ryzen 7 7840U";
    s.device.physicalCores = 8;
    s.device.logicalCores = 16;
    s.device.ramTotalBytes = int64_t(32) << 30;
    s.device.ramAvailableBytes = int64_t(20) << 30;
    s.device.gpus = {"Radeon 780M, 8 GiB"};
    auto &a = s.assignment;
    a.mode = "swarm";
    a.swarm = "wss://swarm.example.org:7443";
    a.cluster = 0, a.clusterCount = 2, a.stage = 1, a.stageCount = 2;
    a.role = "leaf";
    a.layers = {"Linear(512->10)"};
    a.model = "mlp";
    a.job = "fashion-mnist-mlp";
    a.modelLayers = 6;
    a.modelParameters = 669'706;
    a.stageParameters = 5'130;
    a.stageMemoryBytes = uint64_t(3) << 20;
    a.reachability = "unreachable";
    a.reachabilityNote = "peers cannot dial it at 192.0.2.5:4100";
    s.governor.state = "running";
    s.training = {1200, 3000, 0.42, 2345.6, 0.871, 95, 1.5};
    s.contribution = {64000, 1'234'567, 0.5, 12.25};
    s.peers = {{"a", "ada", 0, 0, "training", 2100, false},
               {"b", "you-box", 0, 1, "training", 2345.6, true},
               {"c", "cleo", 1, 0, "idle", 0, false},
               {"d", "dara", 1, 1, "lost", 0, false}};
    s.links = {{"a", "b", Kind::Pipeline}, {"c", "d", Kind::Pipeline}, {"a", "c", Kind::Ring}, {"b", "d", Kind::Ring}};
    s.checkpoints = {{3, "swarm", 1200, 1'700'000'300'000, "mlp", 2'000'000},
                     {2, "swarm", 800, 1'700'000'200'000, "mlp", 2'000'000},
                     {1, "local", 400, 1'700'000'100'000, "mlp", 2'000'000}};
    return s;
}

host::EngineEvent logEvent(Level level, const std::string &area, const std::string &message)
{
    return {1'700'000'000'000, level, area, message};
}

int visibleRows(ui::EventLogView *log) { return log->filter()->rowCount(); }

} // namespace

class TestViews : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void cardsShowTheSnapshot()
    {
        test::UiFixture f;
        f.start();
        QCOMPARE(f.window()->deviceCard()->processorLabel()->text(), QStringLiteral("–")); // not measured yet
        f.publish(swarmSnapshot());
        auto *w = f.window();
        QCOMPARE(w->deviceCard()->processorLabel()->text(), QStringLiteral("Ryzen 7 7840U"));
        QCOMPARE(w->deviceCard()->coresLabel()->text(), QStringLiteral("8 physical, 16 logical"));
        QCOMPARE(w->assignmentCard()->clusterLabel()->text(), QStringLiteral("1 of 2"));
        QCOMPARE(w->assignmentCard()->stageLabel()->text(), QStringLiteral("2 of 2"));
        QCOMPARE(w->assignmentCard()->layersLabel()->text(), QStringLiteral("Linear(512->10)"));
        QCOMPARE(w->assignmentCard()->jobLabel()->text(), QStringLiteral("fashion-mnist-mlp"));
        QCOMPARE(w->assignmentCard()->modelLabel()->text(), QStringLiteral("mlp, 6 layers, 670k parameters"));
        QCOMPARE(w->assignmentCard()->shareLabel()->text(),
                 QStringLiteral("1 layer, 5k parameters (1%), 3 MiB of memory planned"));
        QCOMPARE(w->assignmentCard()->reachLabel()->text(),
                 QStringLiteral("not directly: peers cannot dial it at 192.0.2.5:4100"));
        QCOMPARE(w->contributionCard()->samplesTotalLabel()->text(), QStringLiteral("1,234,567"));
        const QString progress = w->banner()->progressLabel()->text();
        QVERIFY2(progress.contains(QStringLiteral("step 1,200 of 3,000")), qPrintable(progress));
        QVERIFY2(progress.contains(QStringLiteral("87.1%")), qPrintable(progress));
    }

    void joinCardShowsEachStep()
    {
        test::UiFixture f;
        f.start();
        ui::JoinCard *card = f.window()->joinCard();
        QVERIFY(card->isHidden()); // nothing joined yet
        auto s = swarmSnapshot();
        s.join = {{"connect", "done", "connected to the coordinator at 192.0.2.1:7400"},
                  {"register", "done", "the coordinator accepted this computer"},
                  {"reach", "relayed", "other volunteers cannot connect to this computer (timed out)"},
                  {"assign", "working", "waiting: 2 of 4 volunteers are here"}};
        f.publish(s);
        QVERIFY(!card->isHidden());
        const QString states[] = {"done", "done", "relayed", "working"};
        for (int i = 0; i < ui::JoinCard::kSteps; ++i)
            QCOMPARE(card->stepLabel(i)->property("joinState").toString(), states[i]);
        QVERIFY(card->stepLabel(0)->text().contains(QStringLiteral("Connected to the coordinator at 192.0.2.1:7400")));
        QVERIFY(card->stepLabel(2)->accessibleDescription().startsWith(QStringLiteral("through the relay: Other")));
        // A failed step is said in the error colour, its text escaped.
        s.join[0] = {"connect", "failed", "nothing answers at <192.0.2.1:7400>"};
        f.publish(s);
        QCOMPARE(card->stepLabel(0)->property("joinState").toString(), QStringLiteral("failed"));
        QVERIFY(card->stepLabel(0)->text().contains(QStringLiteral("&lt;192.0.2.1:7400&gt;")));
        QVERIFY(card->stepLabel(0)->text().contains(ui::stateColor("error").name()));
        s.join.clear(); // a local run
        f.publish(s);
        QVERIFY(card->isHidden());
    }

    void joinDialogRefusesMalformedJoinStrings()
    {
        ui::JoinChoice initial;
        initial.kind = ui::JoinChoice::Kind::Address;
        ui::JoinDialog dialog(initial);
        const QString pin = QString(64, QLatin1Char('a'));
        QVERIFY(!dialog.startButton()->isEnabled());                             // empty
        const QStringList malformed = {QStringLiteral("swarm.example.org:7400"), // no scheme, no pin
                                       QStringLiteral("https://swarm.example.org:7400/#sha256=") + pin,
                                       QStringLiteral("wss://swarm.example.org:7400/"),            // no pin
                                       QStringLiteral("wss://swarm.example.org:7400/#sha256=abc"), // a short pin
                                       QStringLiteral("wss://swarm.example.org:99999/#sha256=") + pin};
        for (const QString &bad : malformed) {
            dialog.addressEdit()->setText(bad);
            QVERIFY2(!dialog.startButton()->isEnabled(), qPrintable(bad));
            ui::JoinChoice choice;
            choice.kind = ui::JoinChoice::Kind::Address;
            choice.address = bad;
            QVERIFY2(choice.problem().startsWith(QStringLiteral("This is not a join string: ")), qPrintable(bad));
        }
        const QStringList wellFormed = {QStringLiteral("wss://198.51.101.1:7400/#sha256=") + pin,
                                        QStringLiteral("  wss://[2001:db8::1]:7400/#sha256=") + pin.toUpper()};
        for (const QString &good : wellFormed) {
            dialog.addressEdit()->setText(good);
            QVERIFY2(dialog.startButton()->isEnabled(), qPrintable(good));
        }
    }

    void chartsAddOnePointPerNewSnapshot()
    {
        test::UiFixture f;
        f.start();
        auto *charts = f.window()->charts();
        charts->throughputChart()->setBinMs(0); // snapshots here come microseconds apart
        charts->lossChart()->setBinMs(0);
        QCOMPARE(charts->throughputChart()->points().size(), 0);
        auto s = swarmSnapshot();
        f.publish(s);
        QCOMPARE(charts->throughputChart()->points().size(), 1);
        QCOMPARE(charts->throughputChart()->points().back().y(), 2345.6);
        QCOMPARE(charts->lossChart()->points().back().y(), 0.42);
        f.sync(); // nothing new: nothing added
        f.controller->bridge()->pollNow();
        QCOMPARE(charts->throughputChart()->points().size(), 1);
        s.training.step = 1210;
        s.training.loss = 0.4;
        s.training.samplesPerSecond = 2400;
        f.publish(s);
        QCOMPARE(charts->throughputChart()->points().size(), 2);
        QCOMPARE(charts->lossChart()->points().size(), 2);
        charts->throughputChart()->refresh(); // else the next one-second refresh
        QVERIFY(charts->throughputChart()->title().contains(QStringLiteral("2,400")));
        // Paused: throughput drops to zero, the loss is not repeated.
        s.training.samplesPerSecond = 0;
        f.publish(s);
        QCOMPARE(charts->throughputChart()->points().back().y(), 0.0);
        QCOMPARE(charts->lossChart()->points().size(), 2);
    }

    void chartsKeepTheirWindow()
    {
        ui::MetricChart chart(QStringLiteral("t"), 0, ui::MetricChart::YRange::FromZero, QStringLiteral("%.0f"));
        chart.setWindowMs(10'000);
        chart.setBinMs(0);
        for (int i = 0; i <= 30; ++i)
            chart.addPoint(1'000'000 + i * 1000, i);
        QCOMPARE(chart.points().size(), 11); // the last 10 s
        QCOMPARE(chart.points().front().y(), 20.0);
    }

    void chartsAverageWithinABin()
    {
        ui::MetricChart chart(QStringLiteral("t"), 0, ui::MetricChart::YRange::FromZero, QStringLiteral("%.0f"));
        chart.setBinMs(2000);
        chart.addPoint(10'000, 10);
        chart.addPoint(10'500, 20);
        chart.addPoint(11'900, 30);
        QCOMPARE(chart.points().size(), 1);
        QCOMPARE(chart.points().back(), QPointF(10'000, 20));
        chart.addPoint(12'000, 5); // a new bin
        QCOMPARE(chart.points().size(), 2);
        QCOMPARE(chart.points().back().y(), 5.0);
        chart.addPoint(12'100, qQNaN()); // not a number: ignored
        QCOMPARE(chart.points().back().y(), 5.0);
    }

    void peerGraphFollowsThePeers()
    {
        test::UiFixture f;
        f.start();
        auto *view = f.window()->peers()->view();
        QVERIFY(view->peerItems().empty());
        auto s = swarmSnapshot();
        f.publish(s);
        QCOMPARE(view->peerItems().size(), size_t(4));
        QCOMPARE(view->clusterCount(), 2);
        QCOMPARE(view->linkCount(Kind::Pipeline), 2);
        QCOMPARE(view->linkCount(Kind::Ring), 2);
        ui::PeerNodeItem *me = view->peerItems().at("b");
        QVERIFY(me->toolTip().contains(QStringLiteral("2,346 samples/s")));
        QVERIFY(me->toolTip().contains(QStringLiteral("this computer")));
        QCOMPARE(me->fillColor(), ui::stateColor("training"));
        QCOMPARE(view->peerItems().at("d")->fillColor(), ui::stateColor("lost"));
        QVERIFY(ui::stateColor("lost") != ui::stateColor("training"));
        const int rebuilds = view->rebuildCount();

        // Same shape, new states: items are updated in place.
        s.peers[3].state = "training";
        s.peers[3].samplesPerSecond = 1999;
        f.publish(s);
        QCOMPARE(view->rebuildCount(), rebuilds);
        QCOMPARE(view->peerItems().at("d")->fillColor(), ui::stateColor("training"));
        QVERIFY(view->peerItems().at("d")->toolTip().contains(QStringLiteral("1,999 samples/s")));

        // A peer joins: the graph is rebuilt.
        s.peers.push_back({"e", "emil", 2, 0, "training", 10, false});
        s.links.push_back({"c", "e", Kind::Ring});
        f.publish(s);
        QCOMPARE(view->rebuildCount(), rebuilds + 1);
        QCOMPARE(view->clusterCount(), 3);
        QCOMPARE(view->linkCount(Kind::Ring), 3);

        // A link to a peer the snapshot does not list is skipped, not a crash.
        s.links.push_back({"e", "ghost", Kind::Pipeline});
        f.publish(s);
        QCOMPARE(view->linkCount(Kind::Pipeline), 2);
    }

    void peerLayoutPutsClustersInColumnsAndStagesInRows()
    {
        std::vector<host::PeerView> peers = {{"z", "", 2, 1, "", 0, false},
                                             {"x", "", 0, 0, "", 0, false},
                                             {"y", "", 0, 1, "", 0, false},
                                             {"w", "", 2, 1, "", 0, false},
                                             {"v", "", 2, 0, "", 0, false}};
        const auto l = ui::layoutPeers(peers);
        QCOMPARE(l.clusters.size(), size_t(2));
        QCOMPARE(l.clusters[0].id, 0);
        QCOMPARE(l.clusters[1].id, 2);
        QCOMPARE(l.stageRows, 2);
        QCOMPARE(l.centres.at("x").y(), l.centres.at("v").y()); // same stage, same row
        QVERIFY(l.centres.at("y").y() > l.centres.at("x").y());
        QVERIFY(l.centres.at("v").x() > l.centres.at("x").x()); // later cluster, further right
        QCOMPARE(l.centres.at("w").y(), l.centres.at("z").y()); // two peers share a cell
        QVERIFY(l.centres.at("w").x() < l.centres.at("z").x()); // side by side, by id
        QVERIFY(l.clusters[1].box.contains(l.centres.at("z")));
        QVERIFY(l.bounds.contains(l.clusters[1].box));
    }

    void checkpointsListResumeAndDeleteAfterConfirmation()
    {
        test::UiFixture f;
        f.storeConsent();
        f.start();
        auto s = swarmSnapshot();
        s.running = false;
        f.publish(s);
        ui::CheckpointList *list = f.window()->checkpoints();
        QCOMPARE(list->tree()->topLevelItemCount(), 3);
        QCOMPARE(list->tree()->topLevelItem(0)->text(2), QStringLiteral("1,200"));
        QVERIFY(!list->deleteButton()->isEnabled()); // nothing selected
        QVERIFY(list->select(2));

        list->deleteButton()->click();
        QVERIFY(list->confirmation());
        QVERIFY(test::clickButton(list->confirmation(), QStringLiteral("Cancel")));
        f.sync();
        QVERIFY(!f.engine->received("delete-checkpoint:"));

        list->deleteButton()->click();
        QVERIFY(test::clickButton(list->confirmation(), QStringLiteral("Delete")));
        f.sync();
        QVERIFY(f.engine->received("delete-checkpoint:2"));
        QCOMPARE(list->tree()->topLevelItemCount(), 2); // the engine's next snapshot lacks it

        QVERIFY(list->select(1));
        list->resumeButton()->click();
        QVERIFY(test::clickButton(list->confirmation(), QStringLiteral("Resume")));
        f.sync();
        QCOMPARE(f.engine->commands().back(), std::string("resume-checkpoint:1"));
    }

    void resumingWhileTrainingStopsFirst()
    {
        test::UiFixture f;
        f.storeConsent();
        f.start();
        f.publish(swarmSnapshot());
        ui::CheckpointList *list = f.window()->checkpoints();
        QVERIFY(list->select(3));
        list->resumeButton()->click();
        QVERIFY(list->confirmation()->text().contains(QStringLiteral("Stop the current training")));
        QVERIFY(test::clickButton(list->confirmation(), QStringLiteral("Resume")));
        f.sync();
        const auto commands = f.engine->commands();
        QCOMPARE(commands[commands.size() - 2], std::string("stop"));
        QCOMPARE(commands.back(), std::string("resume-checkpoint:3"));
    }

    void eventLogFiltersByLevelAndText()
    {
        test::UiFixture f;
        f.start();
        ui::EventLogView *log = f.window()->eventLog();
        const int before = log->model()->rowCount();
        f.engine->pushEvent(logEvent(Level::Debug, "net", "frame 1234 sent"));
        f.engine->pushEvent(logEvent(Level::Info, "store", "checkpoint saved at step 400"));
        f.engine->pushEvent(logEvent(Level::Warning, "governor", "throttled: disk nearly full"));
        f.engine->pushEvent(logEvent(Level::Error, "net", "peer hana lost"));
        f.engine->notifyFromThread();
        QVERIFY(test::waitFor([&] { return log->model()->rowCount() == before + 4; }, 5s));

        const int infoAndUp = visibleRows(log);
        log->levelBox()->setCurrentIndex(0); // everything
        QCOMPARE(visibleRows(log), infoAndUp + 1);
        log->levelBox()->setCurrentIndex(2); // warnings and errors
        QCOMPARE(visibleRows(log), 2);
        log->levelBox()->setCurrentIndex(3); // errors
        QCOMPARE(visibleRows(log), 1);
        log->levelBox()->setCurrentIndex(0);
        log->textBox()->setText(QStringLiteral("DISK"));
        QCOMPARE(visibleRows(log), 1);
        log->textBox()->setText(QStringLiteral("net")); // the area matches too
        QCOMPARE(visibleRows(log), 2);
        log->levelBox()->setCurrentIndex(3);
        QCOMPARE(visibleRows(log), 1);
        const QModelIndex first = log->filter()->index(0, ui::EventLogModel::MessageColumn);
        QCOMPARE(first.data().toString(), QStringLiteral("peer hana lost"));
    }

    void eventLogIsBounded()
    {
        ui::EventLogModel model(10);
        QList<host::EngineEvent> events;
        for (int i = 0; i < 7; ++i)
            events << logEvent(Level::Info, "train", "e" + std::to_string(i));
        model.append(events);
        model.append(events);
        QCOMPARE(model.rowCount(), 10);
        QCOMPARE(model.index(9, ui::EventLogModel::MessageColumn).data().toString(), QStringLiteral("e6"));
        QCOMPARE(model.index(0, ui::EventLogModel::MessageColumn).data().toString(), QStringLiteral("e4"));
        QList<host::EngineEvent> flood;
        for (int i = 0; i < 25; ++i)
            flood << logEvent(Level::Info, "train", "f" + std::to_string(i));
        model.append(flood);
        QCOMPARE(model.rowCount(), 10);
        QCOMPARE(model.index(0, ui::EventLogModel::MessageColumn).data().toString(), QStringLiteral("f15"));
    }
};

QTEST_MAIN(TestViews)
#include "tst_views.moc"
