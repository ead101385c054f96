// SPDX-License-Identifier: GPL-3.0-or-later
// Hostile volunteers in a real swarm: a coordinator and 4 node processes (2 clusters of
// 2 stages) on loopback, node 1 misbehaving on purpose (ROOKERY_TESTING_MISBEHAVE,
// through rookery-local-swarm --testing-misbehave): poisoned ring chunks, activations
// and gradients, forged "finished" and "failed", forged test tallies, a false
// capacity claim. Each time the honest nodes refuse what it sends, the coordinator
// quarantines it, no honest node's loss or checkpointed weights hold a non-finite
// value, and both clusters reach 85%.
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/store/checkpoint_store.h"
#include "tests/integration/swarm_run.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

using test::checkAccuracy;
using test::SwarmRun;

class TestSwarmTrust : public QObject
{
    Q_OBJECT

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
    // non-finite value: no loss it reported was, and no weights it checkpointed (every
    // 50 steps and at the end, in its data directory under `workDir`) hold one.
    void checkQuarantinedAndClean(const SwarmRun &run, const QString &poisoner, const QString &workDir)
    {
        QVERIFY2(run.output.contains(QStringLiteral("[coordinator] warning coord: quarantined node ") + poisoner),
                 qPrintable(run.output.right(3000)));
        static const QRegularExpression badLoss(QStringLiteral("\\[node ([2-4])\\] step [^\\n]*loss (nan|inf|-nan)"));
        QVERIFY2(!badLoss.match(run.output).hasMatch(), qPrintable(badLoss.match(run.output).captured(0)));
        // The honest node that took the poisoner's layers over got them from a peer: it did
        // not start them again from the run's initial weights.
        static const QRegularExpression lostLayers(
            QStringLiteral("\\[node [2-4]\\] could not fetch the weights[^\\n]*"));
        QVERIFY2(!lostLayers.match(run.output).hasMatch(), qPrintable(lostLayers.match(run.output).captured(0)));
        int checkpoints = 0;
        int64_t values = 0;
        for (int node = 2; node <= 4; ++node) {
            store::CheckpointStore store(std::filesystem::path(workDir.toStdString()) /
                                         ("node-" + std::to_string(node)) / "rookery.db");
            for (const auto &info : store.list()) {
                const auto checkpoint = store.load(info.id);
                ++checkpoints;
                for (const auto &t : checkpoint.state.parameters) {
                    QCOMPARE(int(t.dtype), int(DType::Float32));
                    for (size_t i = 0; i + sizeof(float) <= t.data.size(); i += sizeof(float)) {
                        float v;
                        std::memcpy(&v, t.data.data() + i, sizeof v);
                        QVERIFY2(std::isfinite(v), qPrintable(QStringLiteral("node %1, checkpoint at step %2, %3")
                                                                  .arg(node)
                                                                  .arg(info.step)
                                                                  .arg(QString::fromStdString(t.name))));
                        ++values;
                    }
                }
            }
        }
        qInfo("%d checkpoints of the honest nodes, %lld weights, all finite", checkpoints, (long long)values);
        QVERIFY(checkpoints >= 3);
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
        // Quarantined soon: 3 refusals reported condemn it; a few more may come before the
        // heartbeat that carries them, or its next stage's run stops.
        QVERIFY2(refusals >= 1 && refusals <= 8, qPrintable(run.output.right(3000)));
        checkQuarantinedAndClean(run, culprit, dir.path());
        if (QTest::currentTestFailed())
            return;
        checkAccuracy(run);
    }

private Q_SLOTS:
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
        // Its ring neighbours reported it with every heartbeat; three refusals by one peer,
        // or one each by two (where node 1 sits in two rings), quarantine it, and the next
        // heartbeat carries them: within a dozen rounds it is out.
        QVERIFY2(refusals >= 2 && refusals <= 12, qPrintable(run.output.right(3000)));
        checkQuarantinedAndClean(run, poisoner, dir.path());
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

    // A hostile last stage forges its test results: node 1 claims 512 KiB of memory (so
    // the only stage the planner can give it is the last, holding the final 512x10
    // layer: the stage that answers its root's test batches) and answers every one with
    // a tally of one sample more than the batch, all right. The root refuses the tally
    // and blames node 1 (its next stage, the tally's only author in a pipeline of two),
    // the coordinator quarantines it after 3 refusals, and both clusters still reach
    // 85%, measured by honest stages.
    void aForgedTestTallyIsRefusedAndItsSenderQuarantined()
    {
        static const QRegularExpression refusal(
            QStringLiteral("\\[node (\\d)\\] warning swarm: stage \\d+: refused the test tally of peer (\\w+): "));
        runWithAHostilePipelineNeighbour(QStringLiteral("forged-tally,claim-little-memory"), refusal);
    }

    // A volunteer claims 10^6 GFLOP/s (node 1's profile), far more than any machine has:
    // the planner believes it at first and gives it most of its cluster's layers. Its
    // stage then trains at a tiny fraction of what that claim predicts; the
    // coordinator's claim check (every 2 s; 3 checks running under 1/1,000 of the claim)
    // quarantines it within 6 s of its stage's first measured speed, in the first half of
    // the run, re-plans without it, and both clusters still reach 85%.
    void aCapacityClaimItsTrainingBeliesIsQuarantined()
    {
        // Twice the usual steps: the check needs seconds, and a fast machine trains the
        // usual 1,200 in less than 20.
        const QString kSteps = QStringLiteral("2400");
        QTemporaryDir dir;
        SwarmRun run(QString::fromLatin1(QTest::currentTestFunction()) + QStringLiteral(".log"));
        QVERIFY(run.start(dir.path(), false,
                          {QStringLiteral("--testing-misbehave"), QStringLiteral("1"),
                           QStringLiteral("--testing-misbehaviour"), QStringLiteral("claim-capacity"),
                           QStringLiteral("--steps"), kSteps}));
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
              qPrintable(m.captured(2)), qPrintable(s.captured(1)), qPrintable(kSteps));
        QVERIFY2(s.captured(1).toInt() < kSteps.toInt() / 2, qPrintable(s.captured(0)));
        QVERIFY2(run.output.indexOf(QStringLiteral("done: cluster")) > m.capturedStart(), qPrintable(run.output));
        checkQuarantinedAndClean(run, liar, dir.path());
        if (QTest::currentTestFailed())
            return;
        checkAccuracy(run);
    }
};

int main(int argc, char **argv)
{
    // A run takes minutes on a loaded machine: more than Qt Test's default five.
    if (qEnvironmentVariableIsEmpty("QTEST_FUNCTION_TIMEOUT"))
        qputenv("QTEST_FUNCTION_TIMEOUT", "1200000");
    QCoreApplication app(argc, argv);
    TestSwarmTrust test;
    return QTest::qExec(&test, argc, argv);
}
#include "tst_swarm_trust.moc"
