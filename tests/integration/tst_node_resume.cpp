// SPDX-License-Identifier: GPL-3.0-or-later
// Acceptance: training 2N steps straight equals training N, checkpointing, reloading in
// a new process and training N more (same seed, one thread): bit-identical parameters.
#include <QTemporaryDir>
#include <QtTest>

#include "engine/store/checkpoint_store.h"
#include "tests/support/test_support.h"

using namespace rookery;

namespace {

QStringList nodeArgs(const QString &dataDir, int steps, const QString &optimizer)
{
    return {QStringLiteral("--data-dir"),
            dataDir,
            QStringLiteral("--dataset-dir"),
            QString::fromStdString(test::fashionMnistDir().string()),
            QStringLiteral("--threads"),
            QStringLiteral("1"),
            QStringLiteral("--seed"),
            QStringLiteral("7"),
            QStringLiteral("--optimizer"),
            optimizer,
            QStringLiteral("--lr"),
            optimizer == QStringLiteral("sgd") ? QStringLiteral("0.05") : QStringLiteral("0.001"),
            QStringLiteral("--steps"),
            QString::number(steps),
            QStringLiteral("--checkpoint-every"),
            QStringLiteral("0"),
            QStringLiteral("--eval-every"),
            QStringLiteral("0"),
            QStringLiteral("--train-samples"),
            QStringLiteral("6400"),
            QStringLiteral("--quiet")};
}

store::Checkpoint newest(const QString &dataDir)
{
    store::CheckpointStore s(dataDir.toStdString() + "/rookery.db");
    auto cp = s.loadNewest("local");
    if (!cp)
        throw std::runtime_error("no checkpoint in " + dataDir.toStdString());
    return *cp;
}

} // namespace

class TestNodeResume : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void resumedRunIsBitIdentical_data()
    {
        QTest::addColumn<QString>("optimizer");
        QTest::newRow("sgd") << QStringLiteral("sgd");
        QTest::newRow("adamw") << QStringLiteral("adamw");
    }

    void resumedRunIsBitIdentical()
    {
        QFETCH(QString, optimizer);
        // 130 steps of 64 over 6400 samples crosses an epoch boundary (100 steps/epoch).
        const int n = 130;
        QTemporaryDir straight, split;
        QString out, err;
        QCOMPARE(test::runProgram(test::programPath(QStringLiteral("rookery-node")),
                                  nodeArgs(straight.path(), 2 * n, optimizer), &out, &err),
                 0);
        QCOMPARE(test::runProgram(test::programPath(QStringLiteral("rookery-node")),
                                  nodeArgs(split.path(), n, optimizer), &out, &err),
                 0);
        QCOMPARE(newest(split.path()).state.step, int64_t(n));
        QCOMPARE(test::runProgram(test::programPath(QStringLiteral("rookery-node")),
                                  nodeArgs(split.path(), 2 * n, optimizer)
                                      .replaceInStrings(QStringLiteral("--quiet"), QStringLiteral("--run=local")),
                                  &out, &err),
                 0);
        QVERIFY2(out.contains(QStringLiteral("resuming run 'local' from its checkpoint at step 130")), qPrintable(out));

        const auto a = newest(straight.path()).state;
        const auto b = newest(split.path()).state;
        QCOMPARE(a.step, int64_t(2 * n));
        QCOMPARE(b.step, int64_t(2 * n));
        QCOMPARE(b.cursor, a.cursor);
        QCOMPARE(a.parameters.size(), size_t(6));
        for (size_t i = 0; i < a.parameters.size(); ++i)
            QVERIFY2(a.parameters[i] == b.parameters[i], a.parameters[i].name.c_str());
        QCOMPARE(b.optimizerState, a.optimizerState);
    }
};

QTEST_GUILESS_MAIN(TestNodeResume)
#include "tst_node_resume.moc"
