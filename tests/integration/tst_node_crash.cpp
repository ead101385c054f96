// SPDX-License-Identifier: GPL-3.0-or-later
// Acceptance: SIGKILL the node mid-training, also during a checkpoint write, at least 20
// times: each time the database passes PRAGMA integrity_check, the newest complete
// checkpoint loads, and training resumes from it.
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/store/checkpoint_store.h"
#include "engine/store/sqlite_db.h"
#include "tests/support/test_support.h"

using namespace rookery;
using namespace std::chrono_literals;

class TestNodeCrash : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void survivesRepeatedSigkill()
    {
        QTemporaryDir dir;
        const QStringList args = {QStringLiteral("--data-dir"),
                                  dir.path(),
                                  QStringLiteral("--dataset-dir"),
                                  QString::fromStdString(test::fashionMnistDir().string()),
                                  QStringLiteral("--steps"),
                                  QStringLiteral("100000000"),
                                  QStringLiteral("--checkpoint-every"),
                                  QStringLiteral("10"),
                                  QStringLiteral("--keep"),
                                  QStringLiteral("3"),
                                  QStringLiteral("--eval-every"),
                                  QStringLiteral("0"),
                                  QStringLiteral("--train-samples"),
                                  QStringLiteral("6400"),
                                  QStringLiteral("--threads"),
                                  QStringLiteral("1")};
        const std::string dbPath = dir.path().toStdString() + "/rookery.db";
        QRandomGenerator rng(20261129);
        int64_t newestStep = -1;
        int killsDuringWrite = 0;
        const int kKills = 24;

        for (int i = 0; i < kKills; ++i) {
            QProcess node;
            node.setProcessChannelMode(QProcess::SeparateChannels);
            node.start(test::programPath(QStringLiteral("rookery-node")), args);
            QVERIFY(node.waitForStarted());
            QString out;
            auto readMore = [&] {
                node.waitForReadyRead(20);
                out += QString::fromUtf8(node.readAllStandardOutput());
            };
            // Training must resume from the newest complete checkpoint.
            QVERIFY2(test::waitFor(
                         [&] {
                             readMore();
                             return out.contains(QStringLiteral("training mlp"));
                         },
                         30s),
                     qPrintable(out + QString::fromUtf8(node.readAllStandardError())));
            if (newestStep >= 0)
                QVERIFY2(out.contains(QStringLiteral("from its checkpoint at step %1").arg(newestStep)),
                         qPrintable(out));

            int64_t writing = -1;
            if (i % 2 == 0) {
                // Kill the moment a checkpoint write starts; on the very first run, not
                // during the first write, so that there is a checkpoint to survive.
                const int skip = (newestStep < 0 ? 2 : 1) + int(rng.bounded(3));
                QVERIFY(test::waitFor(
                    [&] {
                        readMore();
                        return out.count(QStringLiteral("checkpoint: saving step")) >= skip;
                    },
                    30s));
                node.kill();
                const auto at = out.lastIndexOf(QStringLiteral("checkpoint: saving step "));
                writing = out.mid(at + 24).section(QLatin1Char('\n'), 0, 0).toLongLong();
            } else {
                QThread::msleep(100 + rng.bounded(1200u));
                node.kill();
            }
            QVERIFY(node.waitForFinished(10000));
            QCOMPARE(node.exitStatus(), QProcess::CrashExit);

            {
                store::Database db(dbPath, store::Database::Access::ReadOnly);
                QCOMPARE(db.scalarText("PRAGMA integrity_check").value_or(""), std::string("ok"));
            }
            store::CheckpointStore checkpoints(dbPath);
            const auto cp = checkpoints.loadNewest("local");
            QVERIFY2(cp.has_value(), "a checkpoint must survive");
            QVERIFY(cp->state.step >= newestStep);
            QCOMPARE(cp->state.parameters.size(), size_t(6));
            QCOMPARE(cp->state.optimizerState.size(), size_t(7)); // 6 momentum buffers + step
            QVERIFY(checkpoints.list("local").size() <= 3);
            if (writing > cp->state.step)
                ++killsDuringWrite;
            newestStep = cp->state.step;
        }
        qInfo("%d SIGKILLs; %d landed while a checkpoint was being written (that checkpoint was absent afterwards, "
              "the previous one loaded); newest step %lld",
              kKills, killsDuringWrite, (long long)newestStep);
        QVERIFY(newestStep > 0);
    }
};

QTEST_GUILESS_MAIN(TestNodeCrash)
#include "tst_node_crash.moc"
