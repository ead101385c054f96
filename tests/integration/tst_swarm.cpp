// SPDX-License-Identifier: GPL-3.0-or-later
// Acceptance of the swarm: a coordinator and 4 node processes (2 clusters of 2 stages)
// on loopback reach 85% test accuracy on Fashion-MNIST with the MLP; the same with one
// node killed by SIGKILL mid-run and restarted, which resumes from its checkpoint; with
// one node poisoning its ring chunks; and a launcher killed by SIGKILL takes its
// coordinator and nodes with it.
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "tests/integration/swarm_run.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

using test::SwarmRun;

class TestSwarm : public QObject
{
    Q_OBJECT

    void checkAccuracy(const SwarmRun &run, size_t clusters = 2)
    {
        const auto acc = run.finalAccuracies();
        QVERIFY2(acc.size() == clusters, qPrintable(run.output.right(3000)));
        for (double a : acc) {
            qInfo("final test accuracy %.2f%%", a * 100);
            QVERIFY2(a >= 0.85, qPrintable(run.output.right(3000)));
        }
    }

    // Node 1's id (its first 12 digits), from the launcher's output: the misbehaving node.
    static QString poisonerOf(const SwarmRun &run)
    {
        static const QRegularExpression idLine(QStringLiteral("\\[node 1\\] joining the swarm at \\S+ as node (\\w+)"));
        return idLine.match(run.output).captured(1).left(12);
    }

    // Counts the refusals `refusal` matches (first group: the refusing node; last group:
    // the peer blamed): none by node 1 itself, and every one blames `poisoner`.
    void countRefusals(const SwarmRun &run, const QRegularExpression &refusal, const QString &poisoner, int &count)
    {
        count = 0;
        for (auto it = refusal.globalMatch(run.output); it.hasNext();) {
            const auto m = it.next();
            QVERIFY2(m.captured(1) != QLatin1String("1"), qPrintable(m.captured(0)));
            QCOMPARE(m.captured(m.lastCapturedIndex()), poisoner);
            ++count;
        }
    }

    // The coordinator quarantined the poisoner, and no honest stage ever trained on a
    // non-finite value.
    void checkQuarantinedAndClean(const SwarmRun &run, const QString &poisoner)
    {
        QVERIFY2(run.output.contains(QStringLiteral("[coordinator] warning coord: quarantined node ") + poisoner),
                 qPrintable(run.output.right(3000)));
        static const QRegularExpression badLoss(QStringLiteral("\\[node ([2-4])\\] step [^\\n]*loss (nan|inf|-nan)"));
        QVERIFY2(!badLoss.match(run.output).hasMatch(), qPrintable(badLoss.match(run.output).captured(0)));
    }

    // A 2x2 run where node 1 misbehaves as `kinds` says (ROOKERY_TESTING_MISBEHAVE): its
    // pipeline neighbours refuse what it sends (`refusal`: first group the refusing node,
    // last the peer blamed), every refusal blames node 1, the coordinator quarantines it,
    // no honest stage trains on a non-finite value, and both clusters reach 85%.
    void runWithAHostilePipelineNeighbour(const QString &kinds, const QRegularExpression &refusal)
    {
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        QVERIFY(run.start(dir.path(), false,
                          {QStringLiteral("--testing-misbehave"), QStringLiteral("1"),
                           QStringLiteral("--testing-misbehaviour"), kinds}));
        QVERIFY2(run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 8min),
                 qPrintable(run.output.right(3000)));
        run.read();
        QCOMPARE(run.process.exitCode(), 0);
        const QString culprit = poisonerOf(run);
        QVERIFY2(!culprit.isEmpty(), qPrintable(run.output.left(3000)));
        int refusals = 0;
        countRefusals(run, refusal, culprit, refusals);
        if (QTest::currentTestFailed())
            return;
        qInfo("%d refusals logged, every one of node 1's (%s, %s)", refusals, qPrintable(culprit), qPrintable(kinds));
        QVERIFY2(refusals >= 1, qPrintable(run.output.right(3000)));
        checkQuarantinedAndClean(run, culprit);
        if (QTest::currentTestFailed())
            return;
        checkAccuracy(run);
    }

private Q_SLOTS:
    void twoClustersOfTwoReach85Percent()
    {
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        QVERIFY(run.start(dir.path(), true));
        QVERIFY2(run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 8min),
                 qPrintable(run.output.right(3000)));
        run.read();
        QCOMPARE(run.process.exitCode(), 0);
        QVERIFY(run.output.contains(QStringLiteral("the run is complete")));
        // Two clusters of two stages: every node held half of the model.
        QCOMPARE(run.output.count(QStringLiteral("stage 1/2")) + run.output.count(QStringLiteral("stage 2/2")) >= 4,
                 true);
        checkAccuracy(run);
    }

    // Rounds beside training (--overlap-averaging): each cluster trains on while its
    // rings average a snapshot, and the round's change lands a few steps late. The run
    // completes, both clusters learn, and the last round (on the stage thread, after the
    // final step) leaves them with the same weights: the same test accuracy.
    void overlappedAveragingEndsWithTheClustersAgreeing()
    {
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        QVERIFY(run.start(dir.path(), true, {QStringLiteral("--overlap-averaging")}));
        QVERIFY2(run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 8min),
                 qPrintable(run.output.right(3000)));
        run.read();
        QCOMPARE(run.process.exitCode(), 0);
        QVERIFY(run.output.contains(QStringLiteral("the run is complete")));
        const auto acc = run.finalAccuracies();
        QVERIFY2(acc.size() == 2, qPrintable(run.output.right(3000)));
        qInfo("final test accuracy %.2f%% and %.2f%%", acc[0] * 100, acc[1] * 100);
        QCOMPARE(acc[0], acc[1]);
        QVERIFY2(acc[0] >= 0.80, qPrintable(run.output.right(3000)));
    }

    // A hostile volunteer: node 1 sends its ring chunks scaled by -1e6 (a testing
    // option). Its ring neighbour refuses every one of them, blames node 1 and uses its
    // own values in their place, so rounds still complete (nobody waits out a timeout),
    // and reports it in its heartbeats: the coordinator quarantines node 1 and re-plans
    // without it. Nothing non-finite or scaled reaches an honest node; the run completes
    // and both clusters still reach 85%.
    void aPoisonedRingChunkIsRefused()
    {
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        QVERIFY(run.start(dir.path(), false, {QStringLiteral("--testing-misbehave"), QStringLiteral("1")}));
        QVERIFY2(run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 8min),
                 qPrintable(run.output.right(3000)));
        run.read();
        QCOMPARE(run.process.exitCode(), 0);
        QVERIFY2(run.output.contains(QStringLiteral("[node 1] warning swarm: ROOKERY_TESTING_MISBEHAVE=ring-poison")),
                 qPrintable(run.output.left(3000)));
        const QString poisoner = poisonerOf(run);
        QVERIFY2(!poisoner.isEmpty(), qPrintable(run.output.left(3000)));
        // Refused, and every refusal blames node 1.
        static const QRegularExpression refusal(QStringLiteral(
            "\\[node (\\d)\\] warning swarm: averaging layers [0-9-]+: ring round \\d+: refused the previous "
            "member's chunk [^\\n]*; used this stage's own values in their place \\(from peer (\\w+)\\)"));
        int refusals = 0;
        countRefusals(run, refusal, poisoner, refusals);
        if (QTest::currentTestFailed())
            return;
        qInfo("%d rounds refused, every one from node 1 (%s)", refusals, qPrintable(poisoner));
        // Its ring neighbour reported it with every heartbeat; three refusals quarantine
        // it, and the next heartbeat carries them: within a dozen rounds it is out.
        QVERIFY2(refusals >= 3 && refusals <= 12, qPrintable(run.output.right(3000)));
        checkQuarantinedAndClean(run, poisoner);
        if (QTest::currentTestFailed())
            return;
        QVERIFY(run.output.contains(QStringLiteral("[node 1] the coordinator stopped this node: quarantined")));
        checkAccuracy(run);
    }

    // A hostile pipeline neighbour: node 1 sends its activations scaled by 1e6 and NaN
    // gradients (whichever its stage sends). Its neighbour refuses them, stops the run
    // (trains nothing of them) and reports it; the coordinator quarantines node 1 and re-plans
    // without it; no honest stage ever trains on a non-finite value and both clusters
    // reach 85%.
    void aPoisonedPipelineNeighbourIsQuarantined()
    {
        static const QRegularExpression refusal(QStringLiteral(
            "\\[node (\\d)\\] warning pipeline: stage \\d+: refused the (activations|gradients) of peer (\\w+): "));
        runWithAHostilePipelineNeighbour(QStringLiteral("activation-scale,nan-gradients"), refusal);
    }

    // A hostile pipeline neighbour forges the end of the run: node 1 sends a "finished"
    // after every 40th activation or gradient it sends. Down the pipeline it comes long
    // before the run's last step, up the pipeline it is never allowed: either way its
    // neighbour refuses it (the run stops and restarts rather than ending for good) and
    // reports it, and the coordinator quarantines node 1 after 3 reports; both clusters
    // still reach 85%.
    void aForgedFinishIsRefusedAndItsSenderQuarantined()
    {
        static const QRegularExpression refusal(
            QStringLiteral("\\[node (\\d)\\] warning pipeline: stage \\d+: refused the 'finished' of peer (\\w+): "));
        runWithAHostilePipelineNeighbour(QStringLiteral("forged-finished"), refusal);
    }

    // A hostile pipeline neighbour forges failures: node 1 sends a "failed" after every
    // 40th activation or gradient it sends. Its neighbour acts on the first 4 (a node
    // gives up after its 4th failure, so an honest one sends no more), restarting its
    // run each time; it refuses the rest without stopping and reports them, and the
    // coordinator quarantines node 1 after 3 reports; both clusters still reach 85%.
    void aForgedFailureIsRefusedAndItsSenderQuarantined()
    {
        static const QRegularExpression refusal(
            QStringLiteral("\\[node (\\d)\\] warning pipeline: stage \\d+: refused the 'failed' of peer (\\w+): "));
        runWithAHostilePipelineNeighbour(QStringLiteral("forged-failed"), refusal);
    }

    // A hostile later stage forges its weights: node 1 claims a quarter of its compute
    // (so the planner gives it the last, smallest layers: a stage the root asks for its
    // weights) and answers every weights request with NaN. The root's evaluation refuses
    // the reply and blames node 1 (the peer it asked), the coordinator quarantines it
    // after 3 refusals; the root's own weights never take the NaN, and both clusters
    // still reach 85%.
    void aForgedWeightsReplyIsRefusedAndItsSenderQuarantined()
    {
        static const QRegularExpression refusal(
            QStringLiteral("\\[node (\\d)\\] warning swarm: stage \\d+: refused the weights of peer (\\w+) "));
        runWithAHostilePipelineNeighbour(QStringLiteral("forged-weights,claim-slow"), refusal);
    }

    // A volunteer claims 10^6 GFLOP/s (node 1's profile), far more than any machine has:
    // the planner believes it at first and gives it most of its cluster's layers. Its
    // stage then trains at a tiny fraction of what that claim predicts; the
    // coordinator's claim check (every 2 s; 3 checks running under 1/1,000 of the claim)
    // quarantines it within 6 s of its stage's first measured speed, early in the run,
    // re-plans without it, and both clusters still reach 85%.
    void aCapacityClaimItsTrainingBeliesIsQuarantined()
    {
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        QVERIFY(run.start(dir.path(), false,
                          {QStringLiteral("--testing-misbehave"), QStringLiteral("1"),
                           QStringLiteral("--testing-misbehaviour"), QStringLiteral("claim-capacity")}));
        QVERIFY2(run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 8min),
                 qPrintable(run.output.right(3000)));
        run.read();
        QCOMPARE(run.process.exitCode(), 0);
        const QString liar = poisonerOf(run);
        QVERIFY2(!liar.isEmpty(), qPrintable(run.output.left(3000)));
        static const QRegularExpression verdict(QStringLiteral(
            "\\[coordinator\\] warning coord: quarantined node (\\w+) [^\\n]*it claimed compute it does not have: "
            "its stage trains at \\d+ samples/s, 1/(\\d+) of the"));
        const auto m = verdict.match(run.output);
        QVERIFY2(m.hasMatch(), qPrintable(run.output.right(3000)));
        QCOMPARE(m.captured(1), liar);
        // No honest node is judged a liar.
        QCOMPARE(run.output.count(QStringLiteral("[coordinator] warning coord: quarantined node")), 1);
        // While the run was young: node 1 was stopped long before its last step, and
        // before any cluster finished.
        static const QRegularExpression stopped(QStringLiteral("\\[node 1\\] stopped at step (\\d+): quarantined"));
        const auto s = stopped.match(run.output);
        QVERIFY2(s.hasMatch(), qPrintable(run.output.right(3000)));
        qInfo("node 1 (%s) quarantined at 1/%s of its claim; it stopped at step %s of %s", qPrintable(liar),
              qPrintable(m.captured(2)), qPrintable(s.captured(1)), qPrintable(test::kSteps));
        QVERIFY2(s.captured(1).toInt() < test::kSteps.toInt() * 3 / 4, qPrintable(s.captured(0)));
        QVERIFY2(run.output.indexOf(QStringLiteral("done: cluster")) > m.capturedStart(), qPrintable(run.output));
        checkQuarantinedAndClean(run, liar);
        if (QTest::currentTestFailed())
            return;
        checkAccuracy(run);
    }

    // Every node advertises an address nobody can dial, as if behind NAT without a
    // mapped port: the only way two stages can link is the coordinator's relay, with
    // their mutual TLS end to end inside it.
    void aPipelineTrainsThroughTheRelay()
    {
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        // One cluster: the whole model's 2,000 steps (two clusters of two need 1,200 each).
        QVERIFY(run.start(dir.path(), true,
                          {QStringLiteral("--nodes"), QStringLiteral("2"), QStringLiteral("--steps"),
                           QStringLiteral("2000"), QStringLiteral("--through-relay")}));
        QVERIFY2(run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 8min),
                 qPrintable(run.output.right(3000)));
        run.read();
        QCOMPARE(run.process.exitCode(), 0);
        QVERIFY(run.output.contains(QStringLiteral("the run is complete")));
        checkAccuracy(run, 1);
    }

    // Certificates of 6 s here (30 days by default): node 3 is killed once every node has
    // renewed its certificate twice (at half of what is left: about 3 s, then 6 s after
    // it registered), so the one each started with has expired.
    // The restarted node 3 links to its neighbours again, which works only because they
    // present their renewed certificates.
    void killedNodeResumesFromItsCheckpoint()
    {
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        QVERIFY(run.start(dir.path(), false,
                          {QStringLiteral("--certificate-lifetime"), QStringLiteral("6"), QStringLiteral("--steps"),
                           QStringLiteral("2400")}));
        // Node 3, once it has trained past a checkpoint (every 50 steps).
        static const QRegularExpression pidLine(QStringLiteral("\\[node 3\\] started, pid (\\d+)"));
        QVERIFY2(run.waitFor([&] { return pidLine.match(run.output).hasMatch(); }, 60s), qPrintable(run.output));
        const int pid = pidLine.match(run.output).captured(1).toInt();
        static const QRegularExpression progress(QStringLiteral("\\[node 3\\] step (\\d+)/"));
        QVERIFY2(run.waitFor(
                     [&] {
                         int last = 0;
                         auto it = progress.globalMatch(run.output);
                         while (it.hasNext())
                             last = it.next().captured(1).toInt();
                         if (last < 300)
                             return false;
                         for (int node = 1; node <= 4; ++node)
                             if (run.output.count(QStringLiteral("[node %1] renewed its certificate").arg(node)) < 2)
                                 return false;
                         return true;
                     },
                     4min),
                 qPrintable(run.output.right(3000)));
        QCOMPARE(::kill(pid, SIGKILL), 0);
        QVERIFY2(run.waitFor([&] { return run.output.contains(QStringLiteral("[node 3] restarted")); }, 60s),
                 qPrintable(run.output.right(3000)));
        static const QRegularExpression resumed(QStringLiteral(
            "\\[node 3\\] resuming stage \\d/2 \\(layers [0-9-]+\\) from its checkpoint at step (\\d+)"));
        // What the restarted process says (an earlier re-plan may have resumed it before).
        const qsizetype restartedAt = run.output.indexOf(QStringLiteral("[node 3] restarted"));
        QVERIFY2(run.waitFor([&] { return resumed.match(run.output, restartedAt).hasMatch(); }, 90s),
                 qPrintable(run.output.right(3000)));
        const auto m = resumed.match(run.output, restartedAt);
        QVERIFY2(m.captured(1).toInt() >= 250, qPrintable(m.captured(0)));
        QVERIFY2(run.waitFor([&] { return run.process.state() == QProcess::NotRunning; }, 8min),
                 qPrintable(run.output.right(3000)));
        run.read();
        QCOMPARE(run.process.exitCode(), 0);
        checkAccuracy(run);
    }

    void aKilledLauncherLeavesNothingRunning()
    {
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        QVERIFY(run.start(dir.path(), false));
        QVERIFY2(run.waitFor([&] { return run.output.contains(QStringLiteral("[node 4] step ")); }, 4min),
                 qPrintable(run.output.right(3000)));
        // Each node's control API shows the whole swarm (read from the coordinator's status
        // API, whose port the launcher passed on): what an attached desktop draws.
        const auto node1 = std::filesystem::path(dir.path().toStdString()) / "node-1";
        QVERIFY(test::waitFor(
            [&] {
                const auto s = test::nodeStatus(node1);
                return s && s->peers.size() == 4 && s->links.size() >= 2 && s->assignment.stageCount == 2;
            },
            60s));
        const auto children = [&] { return processesMentioning(dir.path().toStdString()); };
        QCOMPARE(children().size(), size_t(6)); // the launcher, the coordinator and 4 nodes
        QCOMPARE(::kill(pid_t(run.process.processId()), SIGKILL), 0);
        QVERIFY(run.process.waitForFinished(10'000));
        // Each child gets SIGTERM when its parent dies: the nodes checkpoint and exit.
        QVERIFY2(test::waitFor([&] { return children().empty(); }, 60s),
                 qPrintable(QStringLiteral("%1 processes of the swarm still run").arg(children().size())));
    }

private:
    // Live processes (not zombies) whose command line names `text`.
    static std::vector<int> processesMentioning(const std::string &text)
    {
        std::vector<int> pids;
        for (const auto &entry : std::filesystem::directory_iterator("/proc")) {
            const std::string name = entry.path().filename().string();
            if (name.find_first_not_of("0123456789") != std::string::npos)
                continue;
            std::ifstream in(entry.path() / "cmdline", std::ios::binary);
            const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            if (cmdline.find(text) != std::string::npos)
                pids.push_back(std::stoi(name));
        }
        return pids;
    }
};

int main(int argc, char **argv)
{
    // A run takes minutes on a loaded machine: more than Qt Test's default five.
    if (qEnvironmentVariableIsEmpty("QTEST_FUNCTION_TIMEOUT"))
        qputenv("QTEST_FUNCTION_TIMEOUT", "1200000");
    QCoreApplication app(argc, argv);
    TestSwarm test;
    return QTest::qExec(&test, argc, argv);
}
#include "tst_swarm.moc"
